/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rocev2-go-back-n.h"

#include "metaroce-rocev2-requester.h"

namespace metaroce
{

// ---------------------------------------------------------------------------------------------
// Requester half
// ---------------------------------------------------------------------------------------------

GoBackNRecovery::GoBackNRecovery(const ConnectionConfig& cfg)
    : m_maxInflight(cfg.rocev2.maxInflightPackets),
      m_rto(RoceLocalAckTimeout(cfg.rocev2.localAckTimeout))
{
}

void
GoBackNRecovery::OnPost(RoceRequester& req)
{
    RoceRequesterState state = req.State();
    if (state == RoceRequesterState::IDLE || state == RoceRequesterState::WAITING_ACK)
    {
        req.SetState(req.SendPsn() == req.MaxSentPsn() ? RoceRequesterState::SENDING
                                                       : RoceRequesterState::RETRANSMITTING);
    }
}

bool
GoBackNRecovery::MayTransmit(const RoceRequester& req) const
{
    if (req.SendPsn() == req.MaxSentPsn())
    {
        // A new PSN: respect the in-flight caps and the READ/atomic depth.
        uint32_t inflight = req.InflightPackets();
        if ((m_maxInflight > 0 && inflight >= m_maxInflight) ||
            inflight >= ROCE_MAX_OUTSTANDING_PSNS || !req.MayStartRequest())
        {
            return false;
        }
    }
    return true;
}

void
GoBackNRecovery::SelectPsn(RoceRequester& /*req*/)
{
    // The send cursor runs on in PSN order.
}

void
GoBackNRecovery::Describe(ParsedPacket& /*pkt*/, uint32_t /*offset*/, uint32_t /*recvWqeSn*/) const
{
    // Plain RC opcodes: the responder places by position in the PSN sequence.
}

void
GoBackNRecovery::StateFromCursor(RoceRequester& req)
{
    if (req.SendPsn() == req.NextPostPsn())
    {
        req.SetState(RoceRequesterState::WAITING_ACK);
    }
    else if (req.SendPsn() == req.MaxSentPsn())
    {
        req.SetState(RoceRequesterState::SENDING);
    }
}

void
GoBackNRecovery::OnSent(RoceRequester& req, bool /*retransmission*/)
{
    StateFromCursor(req);
}

Time
GoBackNRecovery::Rto(const RoceRequester& /*req*/) const
{
    return m_rto;
}

void
GoBackNRecovery::OnCursorOvertaken(RoceRequester& req)
{
    StateFromCursor(req);
}

void
GoBackNRecovery::OnProgress(RoceRequester& /*req*/, uint32_t /*from*/)
{
}

void
GoBackNRecovery::Restart(RoceRequester& req, uint32_t psn)
{
    req.Count(Counter::GO_BACK_N);
    req.Locate(psn);
    req.SetState(psn == req.NextPostPsn()  ? RoceRequesterState::WAITING_ACK
                 : psn == req.MaxSentPsn() ? RoceRequesterState::SENDING
                                           : RoceRequesterState::RETRANSMITTING);
    if (req.UnackedPsn() == req.NextPostPsn())
    {
        req.SetState(RoceRequesterState::IDLE);
    }
}

void
GoBackNRecovery::OnSelectiveNack(Time /*now*/, RoceRequester& req, const ParsedPacket& /*pkt*/)
{
    req.Count(Counter::RX_INVALID); // the peer runs IRN, this QP go-back-N
}

uint32_t
GoBackNRecovery::MaxRequestPsns() const
{
    return ROCE_MAX_OUTSTANDING_PSNS - 1;
}

size_t
GoBackNRecovery::HeapBytes() const
{
    return sizeof(*this);
}

// ---------------------------------------------------------------------------------------------
// Responder half
// ---------------------------------------------------------------------------------------------

void
GoBackNReceiver::HandleData(Time now, RoceResponder& resp, const ParsedPacket& pkt)
{
    int32_t d = PsnDiff(pkt.bth.psn, resp.ExpectedPsn());
    if (d < 0)
    {
        // Duplicate (C9-105): already executed; acknowledge again, at once.
        resp.Count(Counter::RX_DUPLICATE);
        resp.ScheduleAck(now, true);
        return;
    }
    if (d > 0)
    {
        resp.Count(Counter::RX_OUT_OF_SEQUENCE);
        if (!m_nakEpisode)
        {
            m_nakEpisode = true;
            resp.QueueNak(Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR, resp.ExpectedPsn());
        }
        return;
    }
    m_nakEpisode = false;
    resp.CancelSequenceNak(); // the missing packet arrived before the NAK left
    // An IRN packet at a go-back-N responder: the two ends disagree on the recovery mode.
    RoceExec result = (pkt.info->headers & HDR_IRH) ? RoceExec::INVALID : Execute(resp, pkt);
    if (result == RoceExec::OK)
    {
        resp.AcceptExpected();
        resp.Count(Counter::RX_DATA);
        bool immediate =
            pkt.bth.ackReq || resp.InOrderSinceAck() >= resp.Config().rocev2.ackEveryPackets;
        resp.ScheduleAck(now, immediate);
        return;
    }
    if (result == RoceExec::RNR)
    {
        m_nakEpisode = true; // later packets are dropped silently until the resend
    }
    resp.NakFor(result, pkt.bth.psn);
}

void
GoBackNReceiver::OnRequestExecuted(Time /*now*/, RoceResponder& resp)
{
    m_nakEpisode = false;
    resp.CancelSequenceNak(); // the missing request arrived before the NAK left
}

RoceExec
GoBackNReceiver::Execute(RoceResponder& resp, const ParsedPacket& pkt)
{
    const ConnectionConfig& cfg = resp.Config();
    const OpcodeInfo& info = *pkt.info;
    MessagePosition pos = info.position;
    bool first = pos == MessagePosition::FIRST || pos == MessagePosition::ONLY;
    bool last = pos == MessagePosition::LAST || pos == MessagePosition::ONLY;
    uint32_t len = pkt.payloadLength;
    // Opcode sequence: First/Only between messages, Middle/Last of the same operation inside
    // one; anything else is an invalid request.
    if (!resp.OpcodeFollows(info))
    {
        return RoceExec::INVALID;
    }
    // Payload lengths: First and Middle carry exactly one PMTU, Last 1..PMTU, Only 0..PMTU.
    if (len > cfg.mtu || (!last && len != cfg.mtu) || (pos == MessagePosition::LAST && len == 0))
    {
        return RoceExec::INVALID;
    }
    if (info.write)
    {
        if (first)
        {
            const Reth& reth = pkt.reth;
            if (reth.dmaLength > cfg.maxMessageSize)
            {
                return RoceExec::INVALID;
            }
            if (!resp.WriteAllowed(reth.rkey, reth.va, reth.dmaLength))
            {
                return RoceExec::ACCESS;
            }
            m_respVa = reth.va;
            m_respRkey = reth.rkey;
            m_respRemaining = reth.dmaLength;
            m_respLength = reth.dmaLength;
        }
        if (last ? len != m_respRemaining : len >= m_respRemaining)
        {
            return RoceExec::INVALID; // the packets do not add up to the DMA length
        }
        if (info.consumesRecv && resp.RecvCount() == 0)
        {
            return RoceExec::RNR; // WRITE with immediate consumes a receive on its last packet
        }
        RoceExec placed = resp.PlaceWrite(m_respRkey, m_respVa, pkt);
        if (placed != RoceExec::OK)
        {
            return placed;
        }
        m_respVa += len;
        m_respRemaining -= len;
        if (!last)
        {
            resp.SetState(RoceResponderState::IN_WRITE);
            return RoceExec::OK;
        }
        resp.SetState(RoceResponderState::IDLE);
        resp.EndMessage();
        if (info.consumesRecv)
        {
            resp.CompleteRecv(WcOpcode::RECV_RDMA_WITH_IMM, m_respLength, true, pkt.immDt);
        }
        return RoceExec::OK;
    }
    // SEND: into the oldest posted receive
    if (resp.RecvCount() == 0)
    {
        return first ? RoceExec::RNR : RoceExec::INVALID;
    }
    if (first)
    {
        m_respOffset = 0;
    }
    RoceExec placed = resp.PlaceIntoRecv(0, m_respOffset, pkt);
    if (placed != RoceExec::OK)
    {
        return placed;
    }
    m_respOffset += len;
    if (!last)
    {
        resp.SetState(RoceResponderState::IN_SEND);
        return RoceExec::OK;
    }
    resp.SetState(RoceResponderState::IDLE);
    resp.EndMessage();
    resp.CompleteRecv(WcOpcode::RECV, m_respOffset, info.immediate, info.immediate ? pkt.immDt : 0);
    return RoceExec::OK;
}

bool
GoBackNReceiver::PollNack(RoceResponder& /*resp*/, TxDatagram& /*out*/, bool& /*sent*/)
{
    return false; // go-back-N has no selective NACKs
}

void
GoBackNReceiver::Clear()
{
}

size_t
GoBackNReceiver::HeapBytes() const
{
    return sizeof(*this);
}

} // namespace metaroce
