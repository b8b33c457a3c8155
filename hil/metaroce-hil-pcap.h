/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_PCAP_H
#define METAROCE_HIL_PCAP_H

#include "metaroce-hil-clock.h"
#include "metaroce-hil-frame-port.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

/**
 * \file
 * Capture to pcap: nanosecond-resolution pcap files (magic 0xa1b23c4d) with Ethernet link type
 * (DLT_EN10MB), each datagram wrapped by the engine's shared EncapsulateFrame(), so captures
 * open in Wireshark and tshark (decode UDP 4791 as RoCE / InfiniBand).
 */

namespace metaroce
{
namespace hil
{

/// Writes a pcap file.
class PcapWriter
{
  public:
    /// pcap magic number of nanosecond-resolution files.
    static constexpr uint32_t MAGIC_NANOSECONDS = 0xa1b23c4d;
    /// Link type Ethernet.
    static constexpr uint32_t LINKTYPE_ETHERNET = 1;
    /// Largest frame kept per record.
    static constexpr uint32_t SNAPLEN = 65535 + 14;

    ~PcapWriter();

    /**
     * Create \p path (truncating it) and write the file header.
     * \param[out] error why it failed
     * \return the writer, or nullptr
     */
    static std::unique_ptr<PcapWriter> Open(const std::string& path, std::string& error);

    /// Append a frame stamped \p unixNanoseconds.
    void WriteFrame(int64_t unixNanoseconds, const uint8_t* frame, size_t len);

    /// Append \p datagram encapsulated with \p meta and the given MAC addresses.
    void WriteDatagram(int64_t unixNanoseconds,
                       const MacAddress& src,
                       const MacAddress& dst,
                       const DatagramMeta& meta,
                       const uint8_t* datagram,
                       size_t len);

    /// \return the number of frames written.
    uint64_t Frames() const
    {
        return m_frames;
    }

    /// Flush buffered records to the file.
    void Flush();

  private:
    explicit PcapWriter(std::FILE* file);

    std::FILE* m_file;            //!< output
    std::vector<uint8_t> m_frame; //!< encapsulation buffer
    uint64_t m_frames{0};         //!< records written
};

/**
 * Wraps a port and writes every datagram it sends and receives to a PcapWriter. Put it
 * inside the fault wrapper (fault(pcap(port))) to capture what actually went on the wire.
 * Ports without MAC addresses (UDP) get SyntheticMac() addresses.
 */
class PcapFramePort : public FramePort
{
  public:
    /// Wrap \p inner, capturing into \p writer.
    PcapFramePort(const HostClock& clock,
                  std::unique_ptr<FramePort> inner,
                  std::unique_ptr<PcapWriter> writer);
    ~PcapFramePort() override;

    void Start(ReceiveHandler onDatagram, BatchHandler onBatch) override;
    SendStatus Send(const TxDatagram& tx) override;

    /// The inner port's. Send() writes the capture from the datagram after the inner Send(),
    /// which may have handed a ring slot to the kernel already: the kernel only reads it, and
    /// nothing reuses it before Send() returns.
    uint8_t* ReserveTxBuffer(size_t& capacity) override
    {
        return m_inner->ReserveTxBuffer(capacity);
    }

    void ReleaseTxBuffer() override
    {
        m_inner->ReleaseTxBuffer();
    }

    SendStatus Flush() override
    {
        return m_inner->Flush();
    }

    void PollReceive() override
    {
        m_inner->PollReceive();
    }

    void SetBacklogEcn(uint32_t threshold) override
    {
        m_inner->SetBacklogEcn(threshold);
    }

    bool DeliversInBlocks() const override
    {
        return m_inner->DeliversInBlocks();
    }

    void AsyncWaitWritable(WritableHandler handler) override;
    void Close() override;
    PortCounters Counters() const override;
    std::string Describe() const override;

    MacAddress LocalMac() const override
    {
        return m_inner->LocalMac();
    }

    void LearnPeer(uint32_t ip,
                   const MacAddress& mac,
                   uint16_t dataPort,
                   bool takesTrains) override;

  private:
    /// \return the MAC to show for \p ip.
    MacAddress MacOf(uint32_t ip, bool local) const;

    const HostClock& m_clock;                             //!< time stamps
    std::unique_ptr<FramePort> m_inner;                   //!< wrapped port
    std::unique_ptr<PcapWriter> m_writer;                 //!< output
    std::vector<std::pair<uint32_t, MacAddress>> m_peers; //!< MACs announced by peers
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_PCAP_H
