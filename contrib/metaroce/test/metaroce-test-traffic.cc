/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-test-traffic.h"

#include "ns3/metaroce-byte-order.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace metaroce_test
{

using namespace ns3;

Blaster::Blaster(Ptr<MetaRoceNetDevice> port, uint32_t srcIp, uint32_t dstIp)
    : m_port(port)
{
    m_meta.srcIp = srcIp;
    m_meta.dstIp = dstIp;
    m_meta.ecn = metaroce::Ecn::ECT0;
    port->SetPullCallback(MakeCallback(&Blaster::Pull, this));
}

void
Blaster::SetSourcePorts(std::vector<uint16_t> ports)
{
    m_srcPorts = std::move(ports);
}

void
Blaster::SetFrames(uint32_t frames)
{
    m_frames = frames;
}

void
Blaster::SetPayload(uint32_t bytes)
{
    m_payload = bytes;
}

void
Blaster::SetEcn(metaroce::Ecn ecn)
{
    m_meta.ecn = ecn;
}

void
Blaster::SetDscp(uint8_t dscp)
{
    m_meta.dscp = dscp;
}

void
Blaster::SetRate(DataRate rate)
{
    m_rate = rate;
}

void
Blaster::Start(Time at)
{
    Simulator::Schedule(at - Simulator::Now(), [this]() {
        m_started = true;
        m_nextAllowed = Simulator::Now();
        m_port->NotifyPullReady();
    });
}

uint32_t
Blaster::GetSent() const
{
    return m_sent;
}

void
Blaster::Wake()
{
    m_wakeScheduled = false;
    m_port->NotifyPullReady();
}

Ptr<Packet>
Blaster::Pull()
{
    if (!m_started || m_sent >= m_frames)
    {
        return nullptr;
    }
    const Time now = Simulator::Now();
    if (m_rate.GetBitRate() > 0 && now < m_nextAllowed)
    {
        if (!m_wakeScheduled)
        {
            m_wakeScheduled = true;
            Simulator::Schedule(m_nextAllowed - now, [this]() { Wake(); });
        }
        return nullptr;
    }
    m_meta.srcPort = m_srcPorts[m_sent % m_srcPorts.size()];
    uint8_t* datagram = m_buffer.data() + metaroce::FRAME_HEADERS_SIZE;
    std::fill(datagram, datagram + m_payload, 0);
    metaroce::WriteU32(datagram, m_sent);
    metaroce::MacAddress src;
    metaroce::MacAddress dst;
    Mac48Address::ConvertFrom(m_port->GetAddress()).CopyTo(src.bytes);
    m_port->GetPeerMac().CopyTo(dst.bytes);
    const size_t len = metaroce::EncapsulateFrame(m_buffer.data(),
                                                  m_buffer.size(),
                                                  src,
                                                  dst,
                                                  m_meta,
                                                  datagram,
                                                  m_payload);
    ++m_sent;
    if (m_rate.GetBitRate() > 0)
    {
        m_nextAllowed =
            std::max(m_nextAllowed, now) + m_rate.CalculateBytesTxTime(uint32_t(len) + 24);
    }
    return Create<Packet>(m_buffer.data(), uint32_t(len));
}

void
Sink::Attach(Ptr<MetaRoceNetDevice> port)
{
    port->SetFrameReceiveCallback(MakeCallback(&Sink::Receive, this));
}

void
Sink::Receive(Ptr<MetaRoceNetDevice> /* port */, Ptr<Packet> frame)
{
    uint8_t headers[METAROCE_HEADER_PEEK_SIZE];
    metaroce::ParsedFrame parsed;
    if (MetaRocePeekFrame(frame, headers, parsed) != metaroce::FrameStatus::OK)
    {
        ++malformed;
        return;
    }
    ++frames;
    bytes += frame->GetSize();
    if (parsed.meta.ecn == metaroce::Ecn::CE)
    {
        ++ceFrames;
    }
    if (parsed.meta.ecn == metaroce::Ecn::NOT_ECT)
    {
        ++notEctFrames;
    }
    ++bySourcePort[parsed.meta.srcPort];
    ++bySourceAddress[parsed.meta.srcIp];
    if (ttls.size() < 1000)
    {
        ttls.push_back(headers[metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_TTL_OFFSET]);
    }
    if (sequence.size() < 10000 && parsed.datagramLen >= 4)
    {
        uint8_t seq[4];
        frame->CopyData(headers, metaroce::FRAME_HEADERS_SIZE + 4);
        std::copy(headers + metaroce::FRAME_HEADERS_SIZE,
                  headers + metaroce::FRAME_HEADERS_SIZE + 4,
                  seq);
        sequence.push_back(metaroce::ReadU32(seq));
    }
}

Ptr<Packet>
MakeFrame(uint32_t srcIp, uint32_t dstIp, uint16_t srcPort, uint32_t payload, metaroce::Ecn ecn)
{
    std::vector<uint8_t> buffer(metaroce::FRAME_HEADERS_SIZE + payload);
    metaroce::DatagramMeta meta;
    meta.srcIp = srcIp;
    meta.dstIp = dstIp;
    meta.srcPort = srcPort;
    meta.ecn = ecn;
    metaroce::MacAddress mac;
    const size_t len = metaroce::EncapsulateFrame(buffer.data(),
                                                  buffer.size(),
                                                  mac,
                                                  mac,
                                                  meta,
                                                  buffer.data() + metaroce::FRAME_HEADERS_SIZE,
                                                  payload);
    return Create<Packet>(buffer.data(), uint32_t(len));
}

} // namespace metaroce_test
