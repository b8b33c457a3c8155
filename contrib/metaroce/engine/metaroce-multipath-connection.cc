/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-multipath-connection.h"

#include <algorithm>

namespace metaroce
{

MultipathConnection::MultipathConnection(EndpointShared& ep,
                                         uint32_t qpn,
                                         const ConnectionConfig& cfg)
    : TransportConnection(ep, qpn, cfg),
      m_requester(*this),
      m_responder(*this)
{
}

size_t
MultipathConnection::PathCount() const
{
    return m_requester.PathCount();
}

const PathState*
MultipathConnection::Path(size_t i) const
{
    return m_requester.Path(i);
}

std::string
MultipathConnection::CheckInvariants() const
{
    return m_requester.CheckInvariants();
}

size_t
MultipathConnection::StateBytes() const
{
    return sizeof(*this) + m_requester.HeapBytes() + m_responder.HeapBytes();
}

uint16_t
MultipathConnection::NakSourcePort() const
{
    return m_requester.SourcePort(0);
}

PostStatus
MultipathConnection::PostSend(Time now, const SendWr& wr, const uint8_t* /*localPtr*/)
{
    // The source is looked up again for every packet sent, so that a region deregistered
    // after the post is never read.
    m_now = now;
    return m_requester.PostSend(now, wr);
}

PostStatus
MultipathConnection::PostRecv(Time /*now*/, const RecvWr& wr, uint8_t* /*localPtr*/)
{
    // The destination is looked up again for every packet placed, so that a region
    // deregistered after the post is never written.
    return m_responder.PostRecv(wr);
}

void
MultipathConnection::HandlePacket(Time now, const DatagramMeta& meta, const ParsedPacket& pkt)
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
    case PacketKind::RESPONSE: // (answers travel on the answering end's paths, as data)
        m_responder.HandleData(now, meta, pkt);
        break;
    case PacketKind::PROBE:
        m_responder.HandleProbe(now, meta, pkt);
        break;
    case PacketKind::ACK:
        if (pkt.bth.opcode == MR_ACK)
        {
            m_requester.HandleAck(now, pkt.mah);
        }
        else if (pkt.bth.opcode == MR_ACK_COALESCED)
        {
            m_requester.HandleCoalescedAck(now, pkt);
        }
        else
        {
            m_requester.HandleNak(now, pkt.mnh);
        }
        break;
    default:
        Count(Counter::RX_WRONG_TRANSPORT);
        break;
    }
}

bool
MultipathConnection::WantsToSend(Time now) const
{
    return !m_error && (m_responder.WantsToSend() || m_requester.WantsToSend(now));
}

bool
MultipathConnection::PollTransmit(Time now, TxDatagram& out)
{
    m_now = now;
    if (m_error)
    {
        return false;
    }
    // ACKs and NAKs first, then path probes, then data.
    if (m_responder.WantsToSend())
    {
        return m_responder.PollTransmit(now, out);
    }
    if (m_requester.ProbeDue())
    {
        return m_requester.SendDueProbe(now, out);
    }
    return m_requester.PollData(now, out);
}

Time
MultipathConnection::NextDeadline() const
{
    if (m_error)
    {
        return TIME_INFINITE;
    }
    return std::min(m_requester.NextDeadline(m_now), m_responder.NextDeadline());
}

void
MultipathConnection::HandleTimeout(Time now)
{
    if (m_error)
    {
        m_now = now;
        return;
    }
    // Time the host let pass beyond the deadline it was given (a stalled host, a late timer,
    // a clock jump) was no chance to retry: it does not count against connectionTimeout.
    Time due = NextDeadline();
    Time since = std::max(due, m_now);
    if (due != TIME_INFINITE && now - since > m_cfg.rtoMin)
    {
        m_requester.ForgiveLateness(now - since);
    }
    m_now = now;
    m_requester.HandleTimeout(now);
    if (m_error)
    {
        return;
    }
    m_responder.HandleTimeout(now);
}

void
MultipathConnection::Flush(Time now)
{
    m_now = now;
    if (!m_error)
    {
        EnterError(now, MultipathRequester::NONE, WcStatus::WR_FLUSH_ERR);
    }
}

void
MultipathConnection::EnterError(Time /*now*/, uint32_t failedSlot, WcStatus status)
{
    m_error = true;
    if (failedSlot == MultipathRequester::NONE)
    {
        // A connection-wide error (its timeout): one work request reports it, the rest are
        // flushed, as on a Verbs QP.
        failedSlot = m_requester.FirstUnfinishedWork();
    }
    size_t streams = std::max(m_requester.StreamCount(), m_responder.StreamCount());
    for (size_t sid = 0; sid < streams; ++sid)
    {
        m_requester.FlushStream(uint16_t(sid), failedSlot, status);
        m_responder.FlushStream(uint16_t(sid));
    }
    m_requester.ClearAfterError();
    m_responder.ClearAfterError();
}

MultipathRole::MultipathRole(MultipathConnection& conn)
    : m_conn(conn),
      m_ep(conn.m_ep),
      m_cfg(conn.m_cfg)
{
}

void
MultipathRole::Count(Counter c, uint64_t n)
{
    m_conn.Count(c, n);
}

bool
MultipathRole::EmitDatagram(TxDatagram& out,
                            ParsedPacket& pkt,
                            const uint8_t* payload,
                            uint32_t payloadLength,
                            Ecn ecn,
                            uint16_t srcPort)
{
    return m_conn.EmitDatagram(out, pkt, payload, payloadLength, ecn, srcPort);
}

void
MultipathRole::NotifyPath(Time now, PathEvent event, const PathState& path)
{
    m_conn.NotifyPath(now, event, path);
}

void
MultipathRole::EnterError(Time now, uint32_t failedSlot, WcStatus status)
{
    m_conn.EnterError(now, failedSlot, status);
}

uint32_t
MultipathRole::RemoteQpn() const
{
    return m_conn.m_remoteQpn;
}

uint32_t
MultipathRole::Qpn() const
{
    return m_conn.Qpn();
}

Time
MultipathRole::HostDelay() const
{
    return m_conn.HostDelay();
}

uint16_t
MultipathRole::NakSourcePort() const
{
    return m_conn.NakSourcePort();
}

} // namespace metaroce
