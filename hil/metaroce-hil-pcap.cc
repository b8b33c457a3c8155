/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-pcap.h"

#include <cerrno>
#include <cstring>

namespace metaroce
{
namespace hil
{
namespace
{

/// Append \p v in host byte order (pcap files are read in the writer's order via the magic).
template <typename T>
void
Put(std::FILE* f, T v)
{
    std::fwrite(&v, sizeof(v), 1, f);
}

} // namespace

PcapWriter::PcapWriter(std::FILE* file)
    : m_file(file),
      m_frame(SNAPLEN + FRAME_HEADERS_SIZE)
{
}

PcapWriter::~PcapWriter()
{
    if (m_file)
    {
        std::fclose(m_file);
    }
}

std::unique_ptr<PcapWriter>
PcapWriter::Open(const std::string& path, std::string& error)
{
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f)
    {
        error = "cannot create " + path + ": " + std::strerror(errno);
        return nullptr;
    }
    Put<uint32_t>(f, MAGIC_NANOSECONDS);
    Put<uint16_t>(f, 2); // version 2.4
    Put<uint16_t>(f, 4);
    Put<int32_t>(f, 0);  // thiszone
    Put<uint32_t>(f, 0); // sigfigs
    Put<uint32_t>(f, SNAPLEN);
    Put<uint32_t>(f, LINKTYPE_ETHERNET);
    return std::unique_ptr<PcapWriter>(new PcapWriter(f));
}

void
PcapWriter::WriteFrame(int64_t unixNanoseconds, const uint8_t* frame, size_t len)
{
    uint32_t kept = uint32_t(len < SNAPLEN ? len : SNAPLEN);
    Put<uint32_t>(m_file, uint32_t(unixNanoseconds / 1000000000));
    Put<uint32_t>(m_file, uint32_t(unixNanoseconds % 1000000000));
    Put<uint32_t>(m_file, kept);
    Put<uint32_t>(m_file, uint32_t(len));
    std::fwrite(frame, 1, kept, m_file);
    ++m_frames;
}

void
PcapWriter::WriteDatagram(int64_t unixNanoseconds,
                          const MacAddress& src,
                          const MacAddress& dst,
                          const DatagramMeta& meta,
                          const uint8_t* datagram,
                          size_t len)
{
    size_t n = EncapsulateFrame(m_frame.data(), m_frame.size(), src, dst, meta, datagram, len);
    if (n > 0)
    {
        WriteFrame(unixNanoseconds, m_frame.data(), n);
    }
}

void
PcapWriter::Flush()
{
    std::fflush(m_file);
}

PcapFramePort::PcapFramePort(const HostClock& clock,
                             std::unique_ptr<FramePort> inner,
                             std::unique_ptr<PcapWriter> writer)
    : m_clock(clock),
      m_inner(std::move(inner)),
      m_writer(std::move(writer))
{
}

PcapFramePort::~PcapFramePort()
{
    if (m_writer)
    {
        m_writer->Flush();
    }
}

MacAddress
PcapFramePort::MacOf(uint32_t ip, bool local) const
{
    if (local)
    {
        MacAddress mac = m_inner->LocalMac();
        return mac == MacAddress() ? SyntheticMac(ip) : mac;
    }
    for (const auto& peer : m_peers)
    {
        if (peer.first == ip && peer.second != MacAddress())
        {
            return peer.second;
        }
    }
    return SyntheticMac(ip);
}

void
PcapFramePort::LearnPeer(uint32_t ip, const MacAddress& mac, uint16_t dataPort, bool takesTrains)
{
    m_peers.emplace_back(ip, mac);
    m_inner->LearnPeer(ip, mac, dataPort, takesTrains);
}

void
PcapFramePort::Start(ReceiveHandler onDatagram, BatchHandler onBatch)
{
    m_inner->Start(
        [this, onDatagram = std::move(onDatagram)](const DatagramMeta& meta,
                                                   const uint8_t* data,
                                                   size_t len) {
            m_writer->WriteDatagram(m_clock.WallNanoseconds(m_clock.Now()),
                                    MacOf(meta.srcIp, false),
                                    MacOf(meta.dstIp, true),
                                    meta,
                                    data,
                                    len);
            onDatagram(meta, data, len);
        },
        std::move(onBatch));
}

SendStatus
PcapFramePort::Send(const TxDatagram& tx)
{
    SendStatus st = m_inner->Send(tx);
    if (st == SendStatus::SENT)
    {
        m_writer->WriteDatagram(m_clock.WallNanoseconds(m_clock.Now()),
                                MacOf(tx.meta.srcIp, true),
                                MacOf(tx.meta.dstIp, false),
                                tx.meta,
                                tx.buffer,
                                tx.length);
    }
    return st;
}

void
PcapFramePort::AsyncWaitWritable(WritableHandler handler)
{
    m_inner->AsyncWaitWritable(std::move(handler));
}

void
PcapFramePort::Close()
{
    m_inner->Close();
    m_writer->Flush();
}

PortCounters
PcapFramePort::Counters() const
{
    return m_inner->Counters();
}

std::string
PcapFramePort::Describe() const
{
    return m_inner->Describe() + " + pcap";
}

} // namespace hil
} // namespace metaroce
