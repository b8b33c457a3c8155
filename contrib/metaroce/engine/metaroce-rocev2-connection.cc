/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rocev2-connection.h"

#include <algorithm>

namespace metaroce
{

namespace
{

/// First UDP source port handed out (the dynamic range, RFC 6335).
constexpr uint16_t EPHEMERAL_PORT_BASE = 49152;
/// IB RNR timer codes (ibv_modify_qp(3), min_rnr_timer) in units of 10 ns; code 0 = 655.36 ms.
constexpr uint32_t RNR_TIMER_10NS[32] = {
    65536000, 1000,    2000,    3000,     4000,     6000,     8000,     12000,
    16000,    24000,   32000,   48000,    64000,    96000,    128000,   192000,
    256000,   384000,  512000,  768000,   1024000,  1536000,  2048000,  3072000,
    4096000,  6144000, 8192000, 12288000, 16384000, 24576000, 32768000, 49152000,
};

} // namespace

Time
RoceLocalAckTimeout(uint8_t n)
{
    if (n == 0)
    {
        return TIME_INFINITE;
    }
    return NanoSeconds(4096) << std::min<uint8_t>(n, 31);
}

Time
RoceV2Connection::RnrTimerValue(uint8_t code)
{
    return NanoSeconds(10) * RNR_TIMER_10NS[code & 0x1F];
}

RoceV2Connection::RoceV2Connection(EndpointShared& ep, uint32_t qpn, const ConnectionConfig& cfg)
    : TransportConnection(ep, qpn, cfg),
      m_srcPort(cfg.sourcePortBase != 0 ? cfg.sourcePortBase
                                        : uint16_t(EPHEMERAL_PORT_BASE + ep.rng.Below(16384))),
      m_rate(
          CreateRoceRateControl(RoceRateControlName(cfg.rocev2),
                                cfg.rocev2,
                                cfg.lineRateBps > 0 ? cfg.lineRateBps : ep.Config().lineRateBps)),
      m_requester(*this),
      m_responder(*this)
{
}

size_t
RoceV2Connection::StateBytes() const
{
    return sizeof(*this) + m_requester.HeapBytes() + m_responder.HeapBytes() + m_rate->HeapBytes();
}

PostStatus
RoceV2Connection::PostSend(Time now, const SendWr& wr, const uint8_t* /*localPtr*/)
{
    m_now = now;
    return m_requester.PostSend(wr);
}

PostStatus
RoceV2Connection::PostRecv(Time now, const RecvWr& wr, uint8_t* /*localPtr*/)
{
    m_now = now;
    return m_responder.PostRecv(wr);
}

void
RoceV2Connection::HandlePacket(Time now, const DatagramMeta& meta, const ParsedPacket& pkt)
{
    m_now = now;
    if (m_error)
    {
        Count(Counter::RX_INVALID);
        return;
    }
    switch (pkt.info->kind)
    {
    case PacketKind::DATA:
        m_responder.HandleData(now, meta, pkt);
        break;
    case PacketKind::ACK:
        m_requester.HandleAck(now, pkt);
        break;
    case PacketKind::RESPONSE:
        m_requester.HandleResponse(now, pkt);
        break;
    case PacketKind::CNP:
        Count(Counter::RX_CNP);
        m_requester.HandleCnp(now);
        break;
    default:
        Count(Counter::RX_WRONG_TRANSPORT);
        break;
    }
}

bool
RoceV2Connection::WantsToSend(Time now) const
{
    if (m_responder.NakPending())
    {
        return true; // even in the error state: the final NAK
    }
    if (m_error)
    {
        return false;
    }
    return m_responder.ControlPending() || m_requester.MayTransmitData(now);
}

bool
RoceV2Connection::PollTransmit(Time now, TxDatagram& out)
{
    m_now = now;
    // READ responses and atomic acknowledges go before a NAK: its PSN acknowledges theirs.
    if (m_responder.NakPending() && (m_error || !m_responder.ResponsePending()))
    {
        return m_responder.SendNak(out);
    }
    if (m_error)
    {
        return false;
    }
    bool sent = false;
    if (m_responder.ControlPending() && m_responder.PollControl(out, sent))
    {
        return sent;
    }
    return m_requester.PollData(now, out);
}

void
RoceV2Connection::Flush(Time now)
{
    m_now = now;
    if (!m_error)
    {
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::WR_FLUSH_ERR);
    }
}

void
RoceV2Connection::EnterError(WcStatus sendStatus, uint32_t failedPsn, WcStatus recvStatus)
{
    m_requester.FlushAfterError(sendStatus, failedPsn);
    m_responder.FlushAfterError(recvStatus);
    m_error = true;
}

Time
RoceV2Connection::NextDeadline() const
{
    if (m_error)
    {
        return TIME_INFINITE;
    }
    return std::min(m_requester.NextDeadline(m_now), m_responder.NextDeadline());
}

void
RoceV2Connection::HandleTimeout(Time now)
{
    m_now = now;
    if (m_error)
    {
        return;
    }
    m_requester.SyncRate(now);
    m_responder.HandleTimeout(now);
    m_requester.HandleTimeout(now);
}

// ---------------------------------------------------------------------------------------------
// What the roles share
// ---------------------------------------------------------------------------------------------

RoceV2Role::RoceV2Role(RoceV2Connection& conn)
    : m_conn(conn),
      m_ep(conn.m_ep),
      m_cfg(conn.m_cfg),
      m_counters(conn.m_counters),
      m_rate(*conn.m_rate),
      m_qpn(conn.Qpn()),
      m_remoteQpn(conn.m_remoteQpn)
{
}

bool
RoceV2Role::Emit(TxDatagram& out,
                 ParsedPacket& pkt,
                 const uint8_t* payload,
                 uint32_t payloadLength,
                 Ecn ecn,
                 uint8_t dscp)
{
    if (!m_conn.EmitDatagram(out, pkt, payload, payloadLength, ecn, m_conn.m_srcPort))
    {
        return false;
    }
    out.meta.dscp = dscp;
    return true;
}

void
RoceV2Role::EnterError(WcStatus sendStatus, uint32_t failedPsn, WcStatus recvStatus)
{
    m_conn.EnterError(sendStatus, failedPsn, recvStatus);
}

} // namespace metaroce
