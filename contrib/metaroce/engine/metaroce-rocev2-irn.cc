/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rocev2-irn.h"

#include "metaroce-rocev2-requester.h"

#include <algorithm>

namespace metaroce
{

namespace
{

/// \return bit \p i of the bitmap \p words.
bool
TestBit(const std::vector<uint64_t>& words, uint32_t i)
{
    return (words[i >> 6] >> (i & 63)) & 1;
}

/// Set bit \p i of \p words to \p on.
void
AssignBit(std::vector<uint64_t>& words, uint32_t i, bool on)
{
    uint64_t mask = uint64_t(1) << (i & 63);
    words[i >> 6] = on ? (words[i >> 6] | mask) : (words[i >> 6] & ~mask);
}

/// \return the 64-bit words of a bitmap of \p bits bits.
size_t
BitmapWords(uint32_t bits)
{
    return (size_t(bits) + 63) / 64;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Requester half
// ---------------------------------------------------------------------------------------------

IrnRecovery::IrnRecovery(const ConnectionConfig& cfg)
    : m_opt(cfg.rocev2),
      m_mask(cfg.rocev2.irnWindow - 1),
      m_sacked(BitmapWords(cfg.rocev2.irnWindow), 0)
{
}

size_t
IrnRecovery::HeapBytes() const
{
    return sizeof(*this) + m_sacked.size() * sizeof(uint64_t);
}

uint32_t
IrnRecovery::Cap() const
{
    uint32_t cap = m_opt.maxInflightPackets;
    uint32_t window = m_mask + 1;
    return (cap == 0 || cap > window) ? window : cap;
}

bool
IrnRecovery::Sacked(uint32_t psn) const
{
    return TestBit(m_sacked, psn & m_mask);
}

bool
IrnRecovery::HolePending() const
{
    // SkipSacked keeps m_retxPsn on an unSACKed, unacknowledged PSN (or at the bound).
    return PsnDiff(m_retxPsn, m_lossBound) < 0;
}

void
IrnRecovery::SkipSacked(const RoceRequester& req)
{
    uint32_t unacked = req.UnackedPsn();
    if (PsnDiff(m_retxPsn, unacked) < 0)
    {
        m_retxPsn = unacked;
    }
    if (PsnDiff(m_lossBound, unacked) < 0)
    {
        m_lossBound = unacked;
    }
    while (PsnDiff(m_retxPsn, m_lossBound) < 0 && Sacked(m_retxPsn))
    {
        m_retxPsn = PsnAdd(m_retxPsn, 1);
    }
}

void
IrnRecovery::UpdateState(RoceRequester& req) const
{
    if (req.State() == RoceRequesterState::ERROR || req.State() == RoceRequesterState::RNR_WAIT)
    {
        return;
    }
    if (req.UnackedPsn() == req.NextPostPsn())
    {
        req.SetState(RoceRequesterState::IDLE);
    }
    else if (HolePending())
    {
        req.SetState(RoceRequesterState::RETRANSMITTING);
    }
    else if (req.MaxSentPsn() != req.NextPostPsn())
    {
        req.SetState(RoceRequesterState::SENDING);
    }
    else
    {
        req.SetState(RoceRequesterState::WAITING_ACK);
    }
}

void
IrnRecovery::OnPost(RoceRequester& req)
{
    UpdateState(req);
}

bool
IrnRecovery::MayTransmit(const RoceRequester& req) const
{
    // Holes first; a new PSN only under the BDP cap (a READ's whole span under it).
    return HolePending() ||
           (req.MaxSentPsn() != req.NextPostPsn() &&
            req.InflightPackets() + req.NewRequestPsns() <= Cap() && req.MayStartRequest());
}

void
IrnRecovery::SelectPsn(RoceRequester& req)
{
    uint32_t psn = HolePending() ? m_retxPsn : req.MaxSentPsn();
    if (psn != req.SendPsn())
    {
        req.Locate(psn);
    }
}

void
IrnRecovery::Describe(ParsedPacket& pkt, uint32_t offset, uint32_t recvWqeSn) const
{
    // Self-describing: the IRN opcode adds the IRH (and the RETH on every WRITE packet).
    pkt.bth.opcode |= IRN_OPCODE_BASE;
    pkt.irh.offset = offset;
    pkt.irh.recvWqeSn = recvWqeSn;
}

void
IrnRecovery::OnSent(RoceRequester& req, bool retransmission)
{
    if (retransmission)
    {
        m_retxPsn = req.SendPsn(); // each hole once on SACK evidence
        if (m_presumedStep != 0 && PsnDiff(m_retxPsn, m_lossBound) > 0)
        {
            // A READ resent from inside the presumed range asks for its whole span: its
            // responses are the resent range, not evidence of the next PSNs missing.
            m_lossBound = m_retxPsn;
        }
        SkipSacked(req);
    }
    UpdateState(req);
}

Time
IrnRecovery::Rto(const RoceRequester& req) const
{
    Time base = req.InflightPackets() <= m_opt.irnLowThreshold ? m_opt.irnRtoLow : m_opt.irnRtoHigh;
    if (!m_opt.irnRtoBackoff)
    {
        return base;
    }
    // Back off on timeouts without progress (RFC 6298, 5.5), up to go-back-N's timer: with
    // IRN's fixed RTO_low/RTO_high under a round trip that grew above them (a deep queue),
    // every timeout resends into the same queue and retryCount timeouts in a row end the
    // connection. Progress resets the count, and so the back-off.
    uint32_t backoff = req.RetriesUsed();
    Time ceiling = RoceLocalAckTimeout(m_opt.localAckTimeout);
    return std::min<Time>(base << backoff, std::max(ceiling, base));
}

void
IrnRecovery::OnCursorOvertaken(RoceRequester& /*req*/)
{
    // OnProgress sets the state.
}

void
IrnRecovery::OnProgress(RoceRequester& req, uint32_t from)
{
    const uint32_t unacked = req.UnackedPsn();
    // The first PSN neither resent nor SACKed: a SACK leaves m_lossBound on the highest
    // SACKed PSN itself, which the responder holds.
    uint32_t frontier = m_lossBound;
    while (m_presumedStep != 0 && PsnDiff(frontier, unacked) < 0 && Sacked(frontier))
    {
        frontier = PsnAdd(frontier, 1);
    }
    // Forget the SACK bits of the PSNs now acknowledged cumulatively.
    for (uint32_t p = from; p != unacked; p = PsnAdd(p, 1))
    {
        AssignBit(m_sacked, p & m_mask, false);
    }
    if (m_presumedStep != 0)
    {
        if (PsnDiff(unacked, m_presumedEnd) >= 0 || PsnDiff(unacked, frontier) > 0)
        {
            // Everything sent before the timeout is acknowledged, or the responder holds a
            // PSN that was not resent: the originals are arriving (the timeout was spurious,
            // or only the resent PSNs were lost). SACKs and the timer take it from here.
            m_presumedStep = 0;
        }
        else if (unacked == frontier)
        {
            // The responder has everything resent and misses the next PSN, sent before the
            // timeout: presume it and the next ones lost, twice as many as the last time.
            m_presumedStep = std::min<uint32_t>(2 * m_presumedStep, Cap());
            uint32_t left = uint32_t(PsnDiff(m_presumedEnd, unacked));
            m_lossBound = PsnAdd(unacked, std::min(m_presumedStep, left));
        }
    }
    SkipSacked(req);
    UpdateState(req);
}

void
IrnRecovery::Timeout(RoceRequester& req, uint32_t psn)
{
    // Resend what the SACKs already showed lost (lost retransmissions among them) and the
    // oldest unacknowledged PSN, but not yet the unSACKed PSNs above the highest SACKed one:
    // they may be in flight still, behind a queue or a stalled host, and resending a whole
    // window at once for a spurious timeout costs a window. Each cumulative ACK that then
    // shows the responder missing the next of them presumes twice as many lost (as TCP's slow
    // start after a timeout); one that acknowledges a PSN not resent ends the presumption
    // (as F-RTO, RFC 5682, detects a spurious timeout). docs/engine-rocev2.md, "Timeout".
    m_presumedEnd = req.MaxSentPsn();
    m_presumedStep = 1;
    const uint32_t pastOldest = PsnAdd(psn, 1); // the oldest unacknowledged PSN at least
    ResendFrom(req, psn, PsnDiff(m_lossBound, pastOldest) < 0 ? pastOldest : m_lossBound);
}

void
IrnRecovery::Restart(RoceRequester& req, uint32_t psn)
{
    // Anything but a timeout (the end of an RNR wait, a gap in READ responses): every
    // unSACKed PSN from psn up to the highest sent is resent once more; SACKed ones are not.
    m_presumedStep = 0;
    ResendFrom(req, psn, req.MaxSentPsn());
}

void
IrnRecovery::ResendFrom(RoceRequester& req, uint32_t psn, uint32_t bound)
{
    m_retxPsn = psn;
    m_lossBound = bound;
    SkipSacked(req);
    if (!HolePending() && req.InflightPackets() > 0)
    {
        // Everything in the range was SACKed, but the cumulative ACK never came (lost, or
        // discarded at a READ or atomic whose response was missing): resend the oldest PSN
        // once, so that the responder acknowledges it again.
        m_retxPsn = req.UnackedPsn();
        m_lossBound = PsnAdd(m_retxPsn, 1);
    }
    UpdateState(req);
}

void
IrnRecovery::OnSelectiveNack(Time now, RoceRequester& req, const ParsedPacket& pkt)
{
    req.Count(Counter::RX_NAK);
    uint32_t cum = pkt.bth.psn;
    uint32_t sack = pkt.ish.sackPsn;
    uint32_t unacked = req.UnackedPsn();
    // Distances from the oldest unacknowledged PSN, so that PSNs far outside the
    // outstanding range cannot pass as inside it through the modular comparison.
    uint32_t outstanding = req.InflightPackets();
    uint32_t cumAhead = (cum - unacked) & PSN_MASK;
    uint32_t sackAhead = (sack - unacked) & PSN_MASK;
    bool cumOld = cumAhead > outstanding && PsnDiff(cum, unacked) < 0;
    // The SACKed PSN arrived ahead of the cumulative one, and both were sent. An older NACK
    // (cum below the oldest unacknowledged PSN) still carries a useful SACK.
    if (pkt.aeth.syndrome != (Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR) ||
        PsnDiff(sack, cum) <= 0 || (cumAhead > outstanding && !cumOld) ||
        (sackAhead >= outstanding && PsnDiff(sack, unacked) >= 0))
    {
        req.Count(Counter::RX_INVALID);
        return;
    }
    if (!cumOld && cumAhead > 0)
    {
        req.AckUpTo(now, cum);
    }
    if (PsnDiff(sack, req.UnackedPsn()) < 0 || req.State() == RoceRequesterState::ERROR)
    {
        return; // acknowledged meanwhile
    }
    AssignBit(m_sacked, sack & m_mask, true);
    if (PsnDiff(sack, m_lossBound) > 0)
    {
        // Every unSACKed PSN below the highest SACKed one is lost (IRN's rule): count the
        // newly revealed ones; they go out before any new PSN.
        uint32_t from = PsnDiff(m_retxPsn, m_lossBound) > 0 ? m_retxPsn : m_lossBound;
        for (uint32_t p = from; PsnDiff(p, sack) < 0; p = PsnAdd(p, 1))
        {
            if (!Sacked(p))
            {
                req.Count(Counter::LOSS_DETECTED);
            }
        }
        m_lossBound = sack;
    }
    SkipSacked(req);
    UpdateState(req);
}

uint32_t
IrnRecovery::MaxRequestPsns() const
{
    return Cap(); // a READ's responses fit the SACK bitmap
}

// ---------------------------------------------------------------------------------------------
// Responder half
// ---------------------------------------------------------------------------------------------

IrnReceiver::IrnReceiver(const ConnectionConfig& cfg)
    : m_mask(cfg.rocev2.irnWindow - 1),
      m_placed(BitmapWords(cfg.rocev2.irnWindow), 0),
      m_slots(cfg.rocev2.irnWindow),
      m_nackQueue(cfg.rocev2.irnWindow)
{
}

size_t
IrnReceiver::HeapBytes() const
{
    return sizeof(*this) + m_placed.size() * sizeof(uint64_t) + m_slots.size() * sizeof(Slot) +
           m_nackQueue.size() * sizeof(uint32_t);
}

void
IrnReceiver::QueueNack(uint32_t sackPsn)
{
    if (m_nackCount > m_mask)
    {
        return; // ring full (a window of NACKs not yet sent): the SACK is only advisory
    }
    m_nackQueue[(m_nackHead + m_nackCount) & m_mask] = sackPsn;
    ++m_nackCount;
}

bool
IrnReceiver::PollNack(RoceResponder& resp, TxDatagram& out, bool& sent)
{
    while (m_nackCount > 0)
    {
        uint32_t sackPsn = m_nackQueue[m_nackHead];
        m_nackHead = (m_nackHead + 1) & m_mask;
        --m_nackCount;
        if (PsnDiff(sackPsn, resp.ExpectedPsn()) < 0)
        {
            resp.MarkAckDue(); // the hole below it filled meanwhile: a plain ACK says more
            continue;
        }
        sent = resp.SendSelectiveNack(out, sackPsn);
        return true;
    }
    return false;
}

void
IrnReceiver::Clear()
{
    m_nackCount = 0;
}

void
IrnReceiver::HandleData(Time now, RoceResponder& resp, const ParsedPacket& pkt)
{
    uint32_t psn = pkt.bth.psn;
    int32_t d = PsnDiff(psn, resp.ExpectedPsn());
    if (d < 0)
    {
        resp.Count(Counter::RX_DUPLICATE); // already delivered: acknowledge again, at once
        resp.ScheduleAck(now, true);
        return;
    }
    if ((pkt.info->headers & HDR_IRH) == 0 || uint32_t(d) > m_mask)
    {
        // A go-back-N packet (the ends disagree on the mode): invalid when it is due. Past
        // the bitmap: dropped unSACKed; the sender never gets that far ahead (BDP cap).
        if (d == 0)
        {
            resp.NakFor(RoceExec::INVALID, psn);
        }
        else
        {
            resp.Count(Counter::RX_OUT_OF_SEQUENCE);
        }
        return;
    }
    uint32_t index = psn & m_mask;
    if (d > 0 && TestBit(m_placed, index))
    {
        resp.Count(Counter::RX_DUPLICATE); // placed already: SACK it again
        QueueNack(psn);
        return;
    }
    RoceExec result = Place(resp, pkt);
    if (result != RoceExec::OK)
    {
        if (d > 0)
        {
            // Not placed and not SACKed: judged again when it is the expected PSN.
            resp.Count(Counter::RX_OUT_OF_SEQUENCE);
            return;
        }
        resp.NakFor(result, psn);
        return;
    }
    resp.Count(Counter::RX_DATA);
    Slot& slot = m_slots[index];
    slot.opcode = pkt.bth.opcode;
    slot.ackReq = pkt.bth.ackReq;
    slot.recvWqeSn = pkt.irh.recvWqeSn;
    slot.endOffset = pkt.irh.offset + pkt.payloadLength;
    slot.dmaLength = pkt.reth.dmaLength;
    slot.immDt = pkt.immDt;
    AssignBit(m_placed, index, true);
    if (d > 0)
    {
        resp.Count(Counter::RX_OUT_OF_SEQUENCE);
        QueueNack(psn);
        return;
    }
    DeliverRun(now, resp);
}

void
IrnReceiver::OnRequestExecuted(Time now, RoceResponder& resp)
{
    // The PSNs after the READ's responses may have been placed ahead: deliver them now.
    if (TestBit(m_placed, resp.ExpectedPsn() & m_mask))
    {
        DeliverRun(now, resp);
    }
}

void
IrnReceiver::DeliverRun(Time now, RoceResponder& resp)
{
    // In order: deliver the run of placed PSNs from ePSN on, completing messages in order.
    uint32_t advanced = 0;
    bool ackReq = false;
    while (TestBit(m_placed, resp.ExpectedPsn() & m_mask))
    {
        uint32_t i = resp.ExpectedPsn() & m_mask;
        AssignBit(m_placed, i, false);
        RoceExec e = Deliver(resp, m_slots[i]);
        if (e != RoceExec::OK)
        {
            resp.NakFor(e, resp.ExpectedPsn());
            return;
        }
        ackReq = ackReq || m_slots[i].ackReq;
        resp.AcceptExpected();
        ++advanced;
    }
    // A filled hole is acknowledged at once: the sender is waiting on it.
    resp.ScheduleAck(now,
                     ackReq || advanced > 1 ||
                         resp.InOrderSinceAck() >= resp.Config().rocev2.ackEveryPackets);
}

RoceExec
IrnReceiver::Place(RoceResponder& resp, const ParsedPacket& pkt)
{
    const ConnectionConfig& cfg = resp.Config();
    const OpcodeInfo& info = *pkt.info;
    MessagePosition pos = info.position;
    bool first = pos == MessagePosition::FIRST || pos == MessagePosition::ONLY;
    bool last = pos == MessagePosition::LAST || pos == MessagePosition::ONLY;
    uint32_t len = pkt.payloadLength;
    uint32_t offset = pkt.irh.offset;
    uint64_t end = uint64_t(offset) + len;
    // The packet describes its own place: First/Only at offset 0, others on a PMTU boundary;
    // lengths as in go-back-N (First and Middle one PMTU, Last 1..PMTU).
    if (len > cfg.mtu || (!last && len != cfg.mtu) || (pos == MessagePosition::LAST && len == 0) ||
        first != (offset == 0) || (offset % cfg.mtu) != 0 || end > cfg.maxMessageSize)
    {
        return RoceExec::INVALID;
    }
    if (info.write)
    {
        const Reth& reth = pkt.reth;
        if (reth.dmaLength > cfg.maxMessageSize ||
            (last ? end != reth.dmaLength : end >= reth.dmaLength))
        {
            return RoceExec::INVALID;
        }
        // Every IRN WRITE packet carries the message's RETH: check the whole range on each,
        // so that a Middle that arrives before its First is never placed when the message is
        // partly outside the region.
        if (!resp.WriteAllowed(reth.rkey, reth.va, reth.dmaLength))
        {
            return RoceExec::ACCESS;
        }
        if (info.consumesRecv && pkt.irh.recvWqeSn - m_rqBaseSn >= resp.RecvCount())
        {
            return RoceExec::RNR;
        }
        return resp.PlaceWrite(reth.rkey, reth.va + offset, pkt);
    }
    // SEND: into the receive WQE the packet names (receives are consumed in order).
    uint32_t k = pkt.irh.recvWqeSn - m_rqBaseSn;
    if (k >= resp.RecvCount())
    {
        return first ? RoceExec::RNR : RoceExec::INVALID;
    }
    return resp.PlaceIntoRecv(k, offset, pkt);
}

RoceExec
IrnReceiver::Deliver(RoceResponder& resp, const Slot& slot)
{
    const OpcodeInfo& info = LookupOpcode(slot.opcode);
    MessagePosition pos = info.position;
    bool first = pos == MessagePosition::FIRST || pos == MessagePosition::ONLY;
    bool last = pos == MessagePosition::LAST || pos == MessagePosition::ONLY;
    // The opcode sequence is checked in PSN order, as go-back-N checks it on arrival.
    if (!resp.OpcodeFollows(info))
    {
        return RoceExec::INVALID;
    }
    if (!info.write)
    {
        if (first)
        {
            m_msgSn = slot.recvWqeSn;
        }
        else if (slot.recvWqeSn != m_msgSn)
        {
            return RoceExec::INVALID; // one SEND, one receive
        }
    }
    if (!last)
    {
        resp.SetState(info.write ? RoceResponderState::IN_WRITE : RoceResponderState::IN_SEND);
        return RoceExec::OK;
    }
    resp.SetState(RoceResponderState::IDLE);
    if (info.consumesRecv && (resp.RecvCount() == 0 || slot.recvWqeSn != m_rqBaseSn))
    {
        return RoceExec::INVALID; // receives complete in post order
    }
    resp.EndMessage();
    if (info.consumesRecv)
    {
        resp.CompleteRecv(info.write ? WcOpcode::RECV_RDMA_WITH_IMM : WcOpcode::RECV,
                          info.write ? slot.dmaLength : slot.endOffset,
                          info.immediate,
                          info.immediate ? slot.immDt : 0);
        ++m_rqBaseSn;
    }
    return RoceExec::OK;
}

} // namespace metaroce
