/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-transport.h"

#include "metaroce-icrc.h"

namespace metaroce
{

EndpointShared::EndpointShared(const EndpointConfig& cfg)
    : rng(cfg.seed),
      m_cfg(cfg)
{
}

bool
EndpointShared::PopCompletion(Completion& c)
{
    if (m_completions.empty())
    {
        return false;
    }
    c = m_completions.front();
    m_completions.pop_front();
    return true;
}

std::shared_ptr<const ConnectionConfig>
EndpointShared::InternConfig(const ConnectionConfig& cfg)
{
    for (size_t i = m_configs.size(); i-- > 0;)
    {
        if (*m_configs[i] == cfg)
        {
            return m_configs[i];
        }
    }
    // A few distinct settings at a time are the common case; beyond that the oldest entry
    // is forgotten (connections that use it keep their copy alive).
    constexpr size_t KEPT = 8;
    if (m_configs.size() == KEPT)
    {
        m_configs.erase(m_configs.begin());
    }
    m_configs.push_back(std::make_shared<const ConnectionConfig>(cfg));
    return m_configs.back();
}

TransportConnection::TransportConnection(EndpointShared& ep,
                                         uint32_t qpn,
                                         const ConnectionConfig& cfg)
    : m_ep(ep),
      m_qpn(qpn),
      m_sharedCfg(ep.InternConfig(cfg)),
      m_cfg(*m_sharedCfg)
{
}

void
TransportConnection::Connect(uint32_t remoteIp, uint32_t remoteQpn)
{
    m_remoteIp = remoteIp;
    m_remoteQpn = remoteQpn;
    m_connected = true;
}

bool
TransportConnection::EmitDatagram(TxDatagram& out,
                                  ParsedPacket& pkt,
                                  const uint8_t* payload,
                                  uint32_t payloadLength,
                                  Ecn ecn,
                                  uint16_t srcPort)
{
    // A virtual region's payload is zeros: a caller that does not read them is spared the
    // writing (unless the ICRC covers them).
    const bool zero = payload == nullptr && payloadLength > 0;
    const bool writeZeros = !(zero && out.zeroPayloadUnread && !m_ep.Config().icrc);
    size_t len = WriteDatagram(out.buffer, out.capacity, pkt, payload, payloadLength, writeZeros);
    if (len == 0)
    {
        return false;
    }
    out.length = len;
    out.payloadZero = zero;
    out.payloadOffset = static_cast<uint32_t>(pkt.payload - out.buffer);
    out.payloadLength = payloadLength;
    out.meta.srcIp = m_ep.Config().localIp;
    out.meta.dstIp = m_remoteIp;
    out.meta.srcPort = srcPort;
    out.meta.dstPort = ROCE_UDP_PORT;
    out.meta.ecn = ecn;
    out.meta.dscp = 0;
    out.connectionId = m_qpn;
    out.pathId = (pkt.info->headers & HDR_MDH)   ? int16_t(pkt.mdh.pathId)
                 : (pkt.info->headers & HDR_MAH) ? int16_t(pkt.mah.pathId)
                 : (pkt.info->headers & HDR_MNH) ? int16_t(pkt.mnh.pathId)
                                                 : int16_t(-1);
    if (m_ep.Config().icrc)
    {
        uint32_t icrc = ComputeDatagramIcrc(out.meta, out.buffer, len - ICRC_SIZE);
        StoreIcrc(out.buffer + len - ICRC_SIZE, icrc);
    }
    return true;
}

} // namespace metaroce
