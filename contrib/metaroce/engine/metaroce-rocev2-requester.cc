/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rocev2-requester.h"

#include "metaroce-rocev2-connection.h"

#include <algorithm>
#include <cstring>

namespace metaroce
{

namespace
{

/// \return true if \p op completes with IBV_WC_SEND (else RDMA_WRITE).
bool
IsSend(WrOpcode op)
{
    return op == WrOpcode::SEND || op == WrOpcode::SEND_WITH_IMM;
}

/// \return true if \p op carries immediate data.
bool
HasImm(WrOpcode op)
{
    return op == WrOpcode::SEND_WITH_IMM || op == WrOpcode::RDMA_WRITE_WITH_IMM;
}

/// \return the completion status of a fatal NAK code.
WcStatus
StatusForNak(uint8_t code)
{
    switch (code)
    {
    case Aeth::NAK_INVALID_REQUEST:
        return WcStatus::REM_INV_REQ_ERR;
    case Aeth::NAK_REMOTE_ACCESS_ERROR:
        return WcStatus::REM_ACCESS_ERR;
    case Aeth::NAK_REMOTE_OPERATIONAL_ERROR:
        return WcStatus::REM_OP_ERR;
    default:
        return WcStatus::GENERAL_ERR;
    }
}

} // namespace

RoceRequester::RoceRequester(RoceV2Connection& conn)
    : RoceV2Role(conn),
      m_recovery(CreateRoceRecovery(m_cfg.rocev2.recovery, m_cfg)),
      m_retriesLeft(m_cfg.rocev2.retryCount),
      m_rnrRetriesLeft(m_cfg.rocev2.rnrRetry)
{
    m_pacer.SetSlack(m_ep.Config().pacingSlack);
}

size_t
RoceRequester::HeapBytes() const
{
    return m_sq.size() * sizeof(SendWqe) + m_recovery->HeapBytes();
}

PostStatus
RoceRequester::PostSend(const SendWr& wr)
{
    // The source is looked up again for every packet sent (SendDataPacket), so that a region
    // deregistered after the post is never read.
    if (wr.streamId != 0)
    {
        return PostStatus::INVALID_STREAM; // RC has one ordered stream
    }
    if (IsAtomic(wr.opcode) && wr.sge.length != ATOMIC_OPERAND_SIZE)
    {
        return PostStatus::INVALID_ARGUMENT; // the original value is one 64-bit word
    }
    if (wr.sge.length > m_cfg.maxMessageSize)
    {
        return PostStatus::TOO_LONG;
    }
    uint32_t packets = std::max<uint32_t>(1, (wr.sge.length + m_cfg.mtu - 1) / m_cfg.mtu);
    if (IsAtomic(wr.opcode))
    {
        packets = 1;
    }
    if (packets >= ROCE_MAX_OUTSTANDING_PSNS ||
        (wr.opcode == WrOpcode::RDMA_READ && packets > m_recovery->MaxRequestPsns()))
    {
        return PostStatus::TOO_LONG;
    }
    if (m_sq.size() >= m_cfg.maxOutstandingWrs ||
        uint32_t(PsnDiff(m_nextPostPsn, m_unackedPsn)) + packets >= ROCE_MAX_OUTSTANDING_PSNS)
    {
        return PostStatus::QUEUE_FULL;
    }
    SendWqe w;
    w.wr = wr;
    w.firstPsn = m_nextPostPsn;
    w.numPackets = packets;
    if (IsSend(wr.opcode) || HasImm(wr.opcode))
    {
        w.recvWqeSn = m_nextRecvSn++;
    }
    m_sq.push_back(w);
    m_nextPostPsn = PsnAdd(m_nextPostPsn, packets);
    m_recovery->OnPost(*this);
    return PostStatus::OK;
}

bool
RoceRequester::MayTransmitData(Time now) const
{
    if (m_state != RoceRequesterState::SENDING && m_state != RoceRequesterState::RETRANSMITTING)
    {
        return false;
    }
    if (!m_pacer.MayTransmit(now))
    {
        return false;
    }
    return m_recovery->MayTransmit(*this);
}

uint8_t
RoceRequester::OpcodeOf(const SendWqe& w, uint32_t packet) const
{
    bool only = w.numPackets == 1;
    bool first = packet == 0;
    bool last = packet + 1 == w.numPackets;
    bool imm = HasImm(w.wr.opcode);
    if (IsSend(w.wr.opcode))
    {
        if (only)
        {
            return imm ? RC_SEND_ONLY_IMM : RC_SEND_ONLY;
        }
        if (first)
        {
            return RC_SEND_FIRST;
        }
        return last ? (imm ? RC_SEND_LAST_IMM : RC_SEND_LAST) : RC_SEND_MIDDLE;
    }
    if (only)
    {
        return imm ? RC_WRITE_ONLY_IMM : RC_WRITE_ONLY;
    }
    if (first)
    {
        return RC_WRITE_FIRST;
    }
    return last ? (imm ? RC_WRITE_LAST_IMM : RC_WRITE_LAST) : RC_WRITE_MIDDLE;
}

bool
RoceRequester::SendDataPacket(Time now, TxDatagram& out)
{
    m_recovery->SelectPsn(*this);
    const SendWqe& w = m_sq[m_sendWqe];
    if (IsReadOrAtomic(w.wr.opcode))
    {
        return SendRequest(now, out, w);
    }
    uint32_t packet = m_sendPacket;
    uint32_t offset = packet * m_cfg.mtu;
    uint32_t length = std::min(m_cfg.mtu, w.wr.sge.length - offset);
    ParsedPacket pkt;
    pkt.bth.opcode = OpcodeOf(w, packet);
    m_recovery->Describe(pkt, offset, w.recvWqeSn);
    pkt.info = &LookupOpcode(pkt.bth.opcode);
    pkt.bth.destQp = RemoteQpn();
    pkt.bth.psn = m_sendPsn;
    pkt.bth.solicited = false;
    // AckReq on the last packet of a message, so its completion is not held by coalescing.
    pkt.bth.ackReq = packet + 1 == w.numPackets;
    pkt.reth.va = w.wr.remoteAddr;
    pkt.reth.rkey = w.wr.rkey;
    pkt.reth.dmaLength = w.wr.sge.length;
    pkt.immDt = w.wr.immData;
    uint8_t* payload = nullptr;
    if (length > 0 &&
        m_ep.memory.Check(w.wr.sge.lkey, w.wr.sge.addr + offset, length, 0, &payload) !=
            PostStatus::OK)
    {
        // IB: the source must still be registered when the NIC reads it.
        EnterError(WcStatus::LOC_PROT_ERR, m_sendPsn, WcStatus::WR_FLUSH_ERR);
        return false;
    }
    // The DSCP is not covered by the ICRC (TOS is masked).
    if (!Emit(out, pkt, payload, length, Ecn::ECT0, m_cfg.rocev2.dscp))
    {
        return false;
    }
    AfterSend(now, out, 1);
    return true;
}

bool
RoceRequester::SendRequest(Time now, TxDatagram& out, const SendWqe& w)
{
    // One request packet for all the PSNs left of the operation: an RDMA READ resent from
    // a missing response asks for the rest of the message only, as IB requesters do.
    uint32_t packet = m_sendPacket;
    ParsedPacket pkt;
    if (w.wr.opcode == WrOpcode::RDMA_READ)
    {
        uint32_t offset = packet * m_cfg.mtu;
        pkt.bth.opcode = RC_READ_REQUEST;
        pkt.reth.va = w.wr.remoteAddr + offset;
        pkt.reth.rkey = w.wr.rkey;
        pkt.reth.dmaLength = w.wr.sge.length - offset;
    }
    else
    {
        bool cas = w.wr.opcode == WrOpcode::ATOMIC_CMP_AND_SWP;
        pkt.bth.opcode = cas ? RC_CMP_SWAP : RC_FETCH_ADD;
        pkt.atomicEth.va = w.wr.remoteAddr;
        pkt.atomicEth.rkey = w.wr.rkey;
        pkt.atomicEth.swapAdd = cas ? w.wr.swap : w.wr.compareAdd;
        pkt.atomicEth.compare = cas ? w.wr.compareAdd : 0;
    }
    pkt.info = &LookupOpcode(pkt.bth.opcode);
    pkt.bth.destQp = RemoteQpn();
    pkt.bth.psn = m_sendPsn;
    if (!Emit(out, pkt, nullptr, 0, Ecn::ECT0, m_cfg.rocev2.dscp))
    {
        return false;
    }
    AfterSend(now, out, w.numPackets - packet);
    return true;
}

void
RoceRequester::AfterSend(Time now, const TxDatagram& out, uint32_t psns)
{
    const SendWqe& w = m_sq[m_sendWqe];
    bool retransmission = PsnDiff(m_sendPsn, m_maxSentPsn) < 0;
    if (retransmission)
    {
        Count(Counter::TX_RETRANSMIT);
    }
    else
    {
        Count(Counter::TX_DATA);
        m_maxSentPsn = PsnAdd(m_sendPsn, psns);
        m_rdAtomicInflight += IsReadOrAtomic(w.wr.opcode) ? 1 : 0;
        while (m_unsentWqe < m_sq.size() &&
               PsnDiff(PsnAdd(m_sq[m_unsentWqe].firstPsn, m_sq[m_unsentWqe].numPackets),
                       m_maxSentPsn) <= 0)
        {
            ++m_unsentWqe;
        }
    }
    if (m_rtoDeadline == TIME_INFINITE)
    {
        ArmRto(now);
    }
    m_sendPsn = PsnAdd(m_sendPsn, psns);
    m_sendPacket += psns;
    if (m_sendPacket == w.numPackets)
    {
        ++m_sendWqe;
        m_sendPacket = 0;
    }
    m_recovery->OnSent(*this, retransmission);
    uint64_t wireBytes = out.length + WIRE_OVERHEAD_BYTES;
    RoceRateControl& rate = RateControl();
    rate.OnBytesSent(now, out.length);
    SyncRate(now);
    double bps = rate.Rate();
    bool paced = m_cfg.lineRateBps > 0 || bps < m_ep.Config().lineRateBps * (1 - 1e-9);
    if (paced && bps > 0)
    {
        m_pacer.OnTransmit(now, wireBytes, bps);
    }
}

void
RoceRequester::SyncRate(Time now)
{
    RoceRateChange change = RateControl().Advance(now);
    if (change.changed)
    {
        if (change.decreased)
        {
            Count(Counter::WINDOW_DECREASE);
        }
        if (m_ep.observer)
        {
            m_ep.observer->OnRateChange(now, Qpn(), change.rate);
        }
    }
    // A faster rate releases a paced packet earlier than the gap computed at the old rate
    // would; a slower one is applied from the next packet on (as a NIC's rate limiter).
}

void
RoceRequester::HandleCnp(Time now)
{
    RateControl().OnCnp(now);
    SyncRate(now);
}

void
RoceRequester::Locate(uint32_t psn)
{
    // Never before the oldest unacknowledged PSN (its request may be completed and gone,
    // e.g. an RNR timer that fires after later ACKs) nor past the next unsent one.
    if (PsnDiff(psn, m_unackedPsn) < 0)
    {
        psn = m_unackedPsn;
    }
    if (PsnDiff(psn, m_nextPostPsn) > 0)
    {
        psn = m_nextPostPsn;
    }
    m_sendPsn = psn;
    if (psn == m_nextPostPsn || m_sq.empty())
    {
        m_sendWqe = m_sq.size();
        m_sendPacket = 0;
        return;
    }
    m_sendWqe = IndexOf(psn);
    m_sendPacket = uint32_t(PsnDiff(psn, m_sq[m_sendWqe].firstPsn));
}

size_t
RoceRequester::IndexOf(uint32_t psn) const
{
    // Requests hold consecutive PSN ranges in post order: binary search on the distance
    // from the oldest request.
    uint32_t base = m_sq.front().firstPsn;
    int32_t target = PsnDiff(psn, base);
    size_t lo = 0;
    size_t hi = m_sq.size() - 1;
    while (lo < hi)
    {
        size_t mid = (lo + hi + 1) / 2;
        if (PsnDiff(m_sq[mid].firstPsn, base) <= target)
        {
            lo = mid;
        }
        else
        {
            hi = mid - 1;
        }
    }
    return lo;
}

void
RoceRequester::ArmRto(Time now)
{
    Time rto = m_recovery->Rto(*this);
    m_rtoArmedAt = now;
    m_rtoArmedRto = rto;
    m_rtoArmedHostDelay = m_conn.HostDelay();
    m_rtoDeadline = rto == TIME_INFINITE ? TIME_INFINITE : now + rto + m_rtoArmedHostDelay;
}

void
RoceRequester::Complete(const SendWqe& w, WcStatus status)
{
    if (status == WcStatus::SUCCESS)
    {
        Count(Counter::MESSAGES_SENT);
        if (!w.wr.signaled)
        {
            return;
        }
    }
    Completion c;
    c.wrId = w.wr.wrId;
    c.status = status;
    c.opcode = WcOpcodeFor(w.wr.opcode);
    c.connectionId = Qpn();
    c.byteLen = w.wr.sge.length;
    m_ep.PushCompletion(c);
}

void
RoceRequester::Progress(Time now, uint32_t newUnacked)
{
    uint32_t oldUnacked = m_unackedPsn;
    m_unackedPsn = newUnacked;
    size_t done = 0;
    while (!m_sq.empty() &&
           PsnDiff(PsnAdd(m_sq.front().firstPsn, m_sq.front().numPackets), newUnacked) <= 0)
    {
        m_rdAtomicInflight -= IsReadOrAtomic(m_sq.front().wr.opcode) ? 1 : 0;
        Complete(m_sq.front(), WcStatus::SUCCESS);
        m_sq.pop_front();
        ++done;
    }
    m_unsentWqe -= done;
    m_gapEpisode = false;
    bool waiting = m_state == RoceRequesterState::RNR_WAIT;
    if (PsnDiff(m_sendPsn, newUnacked) < 0)
    {
        Locate(newUnacked);
        if (!waiting)
        {
            m_recovery->OnCursorOvertaken(*this);
        }
    }
    else
    {
        m_sendWqe -= done;
    }
    m_retriesLeft = m_cfg.rocev2.retryCount;
    m_rnrRetriesLeft = m_cfg.rocev2.rnrRetry;
    if (m_unackedPsn == m_maxSentPsn || waiting)
    {
        m_rtoDeadline = TIME_INFINITE;
    }
    else
    {
        ArmRto(now);
    }
    if (m_unackedPsn == m_nextPostPsn && m_state != RoceRequesterState::RNR_WAIT)
    {
        m_state = RoceRequesterState::IDLE;
    }
    m_recovery->OnProgress(*this, oldUnacked);
}

void
RoceRequester::GoBack(Time now, uint32_t psn, bool timeout)
{
    m_gapEpisode = false; // every restart may detect missing responses once more
    if (timeout)
    {
        m_recovery->Timeout(*this, psn);
    }
    else
    {
        m_recovery->Restart(*this, psn);
    }
    ArmRto(now);
}

uint32_t
RoceRequester::ImplicitAckLimit(uint32_t newUnacked) const
{
    for (const SendWqe& w : m_sq)
    {
        if (PsnDiff(w.firstPsn, newUnacked) >= 0)
        {
            break;
        }
        if (IsReadOrAtomic(w.wr.opcode))
        {
            // Its first PSN without a response (the oldest request holds m_unackedPsn).
            return PsnDiff(m_unackedPsn, w.firstPsn) > 0 ? m_unackedPsn : w.firstPsn;
        }
    }
    return newUnacked;
}

void
RoceRequester::AckUpTo(Time now, uint32_t newUnacked)
{
    uint32_t limit = ImplicitAckLimit(newUnacked);
    if (PsnDiff(limit, m_unackedPsn) > 0)
    {
        Progress(now, limit);
    }
    if (limit != newUnacked)
    {
        ResponseGap(now, limit);
    }
}

void
RoceRequester::ResponseGap(Time now, uint32_t psn)
{
    // The responder went past PSN psn, but its READ response or atomic acknowledge did not
    // arrive: ask again from there at once (once per restart; then the timer).
    if (m_state == RoceRequesterState::ERROR || (m_gapEpisode && m_gapPsn == psn))
    {
        return;
    }
    Count(Counter::LOSS_DETECTED);
    if (m_retriesLeft == 0)
    {
        EnterError(WcStatus::RETRY_EXC_ERR, psn, WcStatus::WR_FLUSH_ERR);
        return;
    }
    --m_retriesLeft;
    GoBack(now, psn);
    m_gapEpisode = true;
    m_gapPsn = psn;
}

bool
RoceRequester::PlaceResponse(const SendWqe& w, uint32_t packet, const ParsedPacket& pkt)
{
    bool read = w.wr.opcode == WrOpcode::RDMA_READ;
    uint32_t len = read ? pkt.payloadLength : ATOMIC_OPERAND_SIZE;
    if (len == 0)
    {
        return true;
    }
    // IB: the local buffer must still be registered, with local write access, when the
    // response lands. An atomic's original value is kept in host order, as Linux rxe does.
    uint64_t addr = w.wr.sge.addr + (read ? uint64_t(packet) * m_cfg.mtu : 0);
    const void* src = read ? static_cast<const void*>(pkt.payload)
                           : static_cast<const void*>(&pkt.atomicAckEth.original);
    if (!m_ep.memory.WriteLocal(w.wr.sge.lkey, addr, src, len))
    {
        return false;
    }
    if (read)
    {
        Count(Counter::BYTES_PLACED, len);
    }
    return true;
}

void
RoceRequester::HandleResponse(Time now, const ParsedPacket& pkt)
{
    const OpcodeInfo& info = *pkt.info;
    uint32_t p = pkt.bth.psn;
    if ((info.headers & HDR_AETH) && (pkt.aeth.syndrome & (0x80 | Aeth::TYPE_MASK)) != 0)
    {
        Count(Counter::RX_INVALID); // responses carry an ACK syndrome
        return;
    }
    if (PsnDiff(p, m_unackedPsn) < 0)
    {
        Count(Counter::RX_DUPLICATE); // answered already (a request that was resent)
        return;
    }
    if (PsnDiff(p, m_maxSentPsn) >= 0)
    {
        Count(Counter::RX_INVALID); // answers nothing sent
        return;
    }
    // Check it against the request it answers before it acknowledges anything.
    const SendWqe w = m_sq[IndexOf(p)];
    bool read = w.wr.opcode == WrOpcode::RDMA_READ;
    uint32_t packet = uint32_t(PsnDiff(p, w.firstPsn));
    bool last = packet + 1 == w.numPackets;
    bool lastPosition =
        info.position == MessagePosition::LAST || info.position == MessagePosition::ONLY;
    uint32_t expected = read ? std::min(m_cfg.mtu, w.wr.sge.length - packet * m_cfg.mtu) : 0;
    if (read != info.read || (!read && !IsAtomic(w.wr.opcode)) || lastPosition != last ||
        pkt.payloadLength != expected)
    {
        Count(Counter::RX_INVALID);
        return;
    }
    // A response acknowledges the PSNs before it, unless one of them awaits a response of its
    // own (then that response was lost: IB requests it again).
    uint32_t limit = ImplicitAckLimit(p);
    if (PsnDiff(limit, m_unackedPsn) > 0)
    {
        Progress(now, limit);
    }
    if (limit != p)
    {
        Count(Counter::RX_OUT_OF_SEQUENCE);
        ResponseGap(now, limit);
        return;
    }
    if (!PlaceResponse(w, packet, pkt))
    {
        EnterError(WcStatus::LOC_PROT_ERR, p, WcStatus::WR_FLUSH_ERR);
        return;
    }
    Count(Counter::RX_DATA);
    Progress(now, PsnAdd(p, 1));
}

void
RoceRequester::HandleAck(Time now, const ParsedPacket& pkt)
{
    if (pkt.bth.opcode == IRN_NACK)
    {
        m_recovery->OnSelectiveNack(now, *this, pkt);
        return;
    }
    const Aeth& aeth = pkt.aeth;
    uint32_t psn = pkt.bth.psn;
    uint8_t type = aeth.syndrome & Aeth::TYPE_MASK;
    uint8_t value = aeth.syndrome & Aeth::VALUE_MASK;
    if ((aeth.syndrome & 0x80) != 0 || type == 0x40)
    {
        Count(Counter::RX_INVALID); // reserved syndrome
        return;
    }
    if (type == Aeth::TYPE_ACK)
    {
        Count(Counter::RX_ACK);
        uint32_t newUnacked = PsnAdd(psn, 1);
        if (PsnDiff(newUnacked, m_maxSentPsn) > 0)
        {
            Count(Counter::RX_INVALID); // acknowledges PSNs never sent
            return;
        }
        if (PsnDiff(newUnacked, m_unackedPsn) > 0)
        {
            AckUpTo(now, newUnacked);
        }
        return; // older or repeated ACK: nothing new
    }
    Count(Counter::RX_NAK);
    // A NAK names the PSN the responder is waiting for (or rejected); it must be
    // outstanding, and it implicitly acknowledges every PSN before it.
    if (PsnDiff(psn, m_unackedPsn) < 0 || PsnDiff(psn, m_maxSentPsn) >= 0)
    {
        Count(Counter::RX_INVALID);
        return;
    }
    // Not past a READ or atomic whose response is missing: a fatal NAK flushes it, any other
    // asks for that response again first.
    uint32_t limit = ImplicitAckLimit(psn);
    if (PsnDiff(limit, m_unackedPsn) > 0)
    {
        Progress(now, limit);
    }
    bool fatal = type == Aeth::TYPE_NAK && value != Aeth::NAK_PSN_SEQUENCE_ERROR;
    if (limit != psn && !fatal)
    {
        ResponseGap(now, limit);
        return;
    }
    if (type == Aeth::TYPE_RNR_NAK)
    {
        if (m_cfg.rocev2.rnrRetry != 7)
        {
            if (m_rnrRetriesLeft == 0)
            {
                EnterError(WcStatus::RNR_RETRY_EXC_ERR, psn, WcStatus::WR_FLUSH_ERR);
                return;
            }
            --m_rnrRetriesLeft;
        }
        m_state = RoceRequesterState::RNR_WAIT;
        m_rnrPsn = psn;
        m_rnrDeadline = now + RoceV2Connection::RnrTimerValue(value);
        m_rtoDeadline = TIME_INFINITE;
        return;
    }
    if (value == Aeth::NAK_PSN_SEQUENCE_ERROR)
    {
        Count(Counter::LOSS_DETECTED);
        if (m_retriesLeft == 0)
        {
            EnterError(WcStatus::RETRY_EXC_ERR, psn, WcStatus::WR_FLUSH_ERR);
            return;
        }
        --m_retriesLeft;
        GoBack(now, psn);
        return;
    }
    if (value > Aeth::NAK_REMOTE_OPERATIONAL_ERROR)
    {
        Count(Counter::RX_INVALID);
        return;
    }
    EnterError(StatusForNak(value), psn, WcStatus::WR_FLUSH_ERR);
}

void
RoceRequester::FlushAfterError(WcStatus status, uint32_t failedPsn)
{
    // The request holding failedPsn (if any) gets status; every other outstanding request
    // is flushed, in post order.
    for (const SendWqe& w : m_sq)
    {
        bool failed = status != WcStatus::WR_FLUSH_ERR && PsnDiff(failedPsn, w.firstPsn) >= 0 &&
                      PsnDiff(failedPsn, PsnAdd(w.firstPsn, w.numPackets)) < 0;
        Complete(w, failed ? status : WcStatus::WR_FLUSH_ERR);
    }
    m_sq.clear();
    m_unsentWqe = 0;
    m_rdAtomicInflight = 0;
    m_state = RoceRequesterState::ERROR;
    m_rtoDeadline = TIME_INFINITE;
    m_rnrDeadline = TIME_INFINITE;
}

void
RoceRequester::HandleTimeout(Time now)
{
    if (m_state == RoceRequesterState::RNR_WAIT && m_rnrDeadline <= now)
    {
        m_rnrDeadline = TIME_INFINITE;
        m_state = RoceRequesterState::SENDING;
        GoBack(now, m_rnrPsn);
    }
    if (m_rtoDeadline <= now)
    {
        m_rtoDeadline = TIME_INFINITE;
        if (m_unackedPsn == m_maxSentPsn)
        {
            return; // nothing outstanding (disarmed late)
        }
        // The timer's length for what is outstanding now: IRN's RTO_low is for at most N
        // packets in flight, but the timer is armed by the first packet out, and the rest
        // of a window follows it. A timer armed with RTO_low that expires with more packets
        // outstanding waits until RTO_high after it was armed (docs/engine-rocev2.md).
        // Only a longer timer postpones it, and with the host delay it was armed with
        // (Endpoint::SetHostDelay: timers already armed keep their deadlines).
        Time rto = m_recovery->Rto(*this);
        if (rto != TIME_INFINITE && rto > m_rtoArmedRto &&
            m_rtoArmedAt + rto + m_rtoArmedHostDelay > now)
        {
            m_rtoDeadline = m_rtoArmedAt + rto + m_rtoArmedHostDelay;
            return;
        }
        Count(Counter::RTO);
        if (m_retriesLeft == 0)
        {
            EnterError(WcStatus::RETRY_EXC_ERR, m_unackedPsn, WcStatus::WR_FLUSH_ERR);
            return;
        }
        --m_retriesLeft;
        GoBack(now, m_unackedPsn, true);
    }
}

} // namespace metaroce
