/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rocev2-connection.h"

#include <algorithm>
#include <cstring>

namespace metaroce
{

namespace
{

/// First UDP source port handed out (the dynamic range, RFC 6335).
constexpr uint16_t EPHEMERAL_PORT_BASE = 49152;
/// Unacknowledged PSNs are kept below half of the 24-bit space so PSN comparisons hold.
constexpr uint32_t MAX_OUTSTANDING_PSNS = 1u << 22;
/// IB RNR timer codes (ibv_modify_qp(3), min_rnr_timer) in units of 10 ns; code 0 = 655.36 ms.
constexpr uint32_t RNR_TIMER_10NS[32] = {
    65536000, 1000,    2000,    3000,     4000,     6000,     8000,     12000,
    16000,    24000,   32000,   48000,    64000,    96000,    128000,   192000,
    256000,   384000,  512000,  768000,   1024000,  1536000,  2048000,  3072000,
    4096000,  6144000, 8192000, 12288000, 16384000, 24576000, 32768000, 49152000,
};

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

} // namespace

Time
RoceV2Connection::LocalAckTimeout(uint8_t n)
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
      m_retriesLeft(cfg.rocev2.retryCount),
      m_rnrRetriesLeft(cfg.rocev2.rnrRetry),
      m_rate(
          CreateRoceRateControl(RoceRateControlName(cfg.rocev2),
                                cfg.rocev2,
                                cfg.lineRateBps > 0 ? cfg.lineRateBps : ep.Config().lineRateBps)),
      m_srcPort(cfg.sourcePortBase != 0 ? cfg.sourcePortBase
                                        : uint16_t(EPHEMERAL_PORT_BASE + ep.rng.Below(16384))),
      m_irn(cfg.rocev2.recovery == "irn"),
      m_irnMask(cfg.rocev2.irnWindow - 1)
{
    if (m_irn)
    {
        // The bitmaps, slots and NACK ring are sized once: nothing grows per packet.
        size_t words = (size_t(cfg.rocev2.irnWindow) + 63) / 64;
        m_sacked.assign(words, 0);
        m_placed.assign(words, 0);
        m_slots.resize(cfg.rocev2.irnWindow);
        m_nackQueue.resize(cfg.rocev2.irnWindow);
    }
}

size_t
RoceV2Connection::StateBytes() const
{
    return sizeof(*this) + m_sq.size() * sizeof(SendWqe) + m_rq.size() * sizeof(PostedRecv) +
           (m_sacked.size() + m_placed.size()) * sizeof(uint64_t) +
           m_slots.size() * sizeof(IrnSlot) + m_nackQueue.size() * sizeof(uint32_t) +
           m_rate->HeapBytes();
}

// ---------------------------------------------------------------------------------------------
// Requester
// ---------------------------------------------------------------------------------------------

PostStatus
RoceV2Connection::PostSend(Time now, const SendWr& wr, const uint8_t* /*localPtr*/)
{
    // The source is looked up again for every packet sent (SendDataPacket), so that a region
    // deregistered after the post is never read.
    m_now = now;
    if (wr.streamId != 0)
    {
        return PostStatus::INVALID_STREAM; // RC has one ordered stream
    }
    if (wr.sge.length > m_cfg.maxMessageSize)
    {
        return PostStatus::TOO_LONG;
    }
    uint32_t packets = std::max<uint32_t>(1, (wr.sge.length + m_cfg.mtu - 1) / m_cfg.mtu);
    if (packets >= MAX_OUTSTANDING_PSNS)
    {
        return PostStatus::TOO_LONG;
    }
    if (m_sq.size() >= m_cfg.maxOutstandingWrs ||
        uint32_t(PsnDiff(m_nextPostPsn, m_unackedPsn)) + packets >= MAX_OUTSTANDING_PSNS)
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
    if (m_irn)
    {
        IrnUpdateState();
        return PostStatus::OK;
    }
    if (m_reqState == RequesterState::IDLE || m_reqState == RequesterState::WAITING_ACK)
    {
        m_reqState =
            (m_sendPsn == m_maxSentPsn) ? RequesterState::SENDING : RequesterState::RETRANSMITTING;
    }
    return PostStatus::OK;
}

uint32_t
RoceV2Connection::InflightPackets() const
{
    return uint32_t(PsnDiff(m_maxSentPsn, m_unackedPsn));
}

bool
RoceV2Connection::MayTransmitData(Time now) const
{
    if (m_reqState != RequesterState::SENDING && m_reqState != RequesterState::RETRANSMITTING)
    {
        return false;
    }
    if (!m_pacer.MayTransmit(now))
    {
        return false;
    }
    if (m_irn)
    {
        // Holes first; a new PSN only under the BDP cap.
        return IrnHolePending() || (m_maxSentPsn != m_nextPostPsn && InflightPackets() < IrnCap());
    }
    if (m_sendPsn == m_maxSentPsn)
    {
        // A new PSN: respect the in-flight caps.
        uint32_t cap = m_cfg.rocev2.maxInflightPackets;
        uint32_t inflight = InflightPackets();
        if ((cap > 0 && inflight >= cap) || inflight >= MAX_OUTSTANDING_PSNS)
        {
            return false;
        }
    }
    return true;
}

bool
RoceV2Connection::WantsToSend(Time now) const
{
    if (m_nakPending)
    {
        return true; // even in the error state: the final NAK
    }
    if (m_error)
    {
        return false;
    }
    return m_cnpNow || m_ackNow || m_nackCount > 0 || MayTransmitData(now);
}

bool
RoceV2Connection::PollTransmit(Time now, TxDatagram& out)
{
    m_now = now;
    if (m_nakPending)
    {
        m_nakPending = false;
        m_ackNow = false; // the NAK's PSN acknowledges everything before it
        m_unackedCount = 0;
        m_ackDeadline = TIME_INFINITE;
        Count(Counter::TX_NAK);
        return SendAck(out, m_nakSyndrome, m_nakPsn);
    }
    if (m_error)
    {
        return false;
    }
    if (m_cnpNow)
    {
        m_cnpNow = false;
        return SendCnp(out);
    }
    while (m_nackCount > 0)
    {
        uint32_t sackPsn = m_nackQueue[m_nackHead];
        m_nackHead = (m_nackHead + 1) & m_irnMask;
        --m_nackCount;
        if (PsnDiff(sackPsn, m_ePsn) < 0)
        {
            m_ackNow = true; // the hole below it filled meanwhile: a plain ACK says more
            continue;
        }
        // The NACK's PSN (ePSN) acknowledges everything before it, as an ACK would.
        m_ackNow = false;
        m_unackedCount = 0;
        m_ackDeadline = TIME_INFINITE;
        Count(Counter::TX_NAK);
        return SendIrnNack(out, sackPsn);
    }
    if (m_ackNow)
    {
        m_ackNow = false;
        m_unackedCount = 0;
        m_ackDeadline = TIME_INFINITE;
        Count(Counter::TX_ACK);
        return SendAck(out, Aeth::TYPE_ACK | Aeth::CREDITS_INVALID, PsnAdd(m_ePsn, PSN_MASK));
    }
    SyncRate(now);
    if (!MayTransmitData(now))
    {
        return false;
    }
    return SendDataPacket(now, out);
}

uint8_t
RoceV2Connection::OpcodeOf(const SendWqe& w, uint32_t packet) const
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
RoceV2Connection::SendDataPacket(Time now, TxDatagram& out)
{
    if (m_irn)
    {
        IrnSelectPsn();
    }
    const SendWqe& w = m_sq[m_sendWqe];
    uint32_t packet = m_sendPacket;
    uint32_t offset = packet * m_cfg.mtu;
    uint32_t length = std::min(m_cfg.mtu, w.wr.sge.length - offset);
    ParsedPacket pkt;
    pkt.bth.opcode = OpcodeOf(w, packet);
    if (m_irn)
    {
        // Self-describing: the IRN opcode adds the IRH (and the RETH on every WRITE packet).
        pkt.bth.opcode |= IRN_OPCODE_BASE;
        pkt.irh.offset = offset;
        pkt.irh.recvWqeSn = w.recvWqeSn;
    }
    pkt.info = &LookupOpcode(pkt.bth.opcode);
    pkt.bth.destQp = m_remoteQpn;
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
    if (!EmitDatagram(out, pkt, payload, length, Ecn::ECT0, m_srcPort))
    {
        return false;
    }
    out.meta.dscp = m_cfg.rocev2.dscp; // not covered by the ICRC (TOS is masked)
    bool retransmission = PsnDiff(m_sendPsn, m_maxSentPsn) < 0;
    if (retransmission)
    {
        Count(Counter::TX_RETRANSMIT);
    }
    else
    {
        Count(Counter::TX_DATA);
        m_maxSentPsn = PsnAdd(m_maxSentPsn, 1);
    }
    if (m_rtoDeadline == TIME_INFINITE)
    {
        ArmRto(now);
    }
    m_sendPsn = PsnAdd(m_sendPsn, 1);
    if (++m_sendPacket == w.numPackets)
    {
        ++m_sendWqe;
        m_sendPacket = 0;
    }
    if (m_irn)
    {
        if (retransmission)
        {
            m_retxPsn = m_sendPsn; // each hole once on SACK evidence
            IrnSkipSacked();
        }
        IrnUpdateState();
    }
    else
    {
        AfterSend();
    }
    uint64_t wireBytes = out.length + WIRE_OVERHEAD_BYTES;
    m_rate->OnBytesSent(now, out.length);
    SyncRate(now);
    double rate = PacingRate();
    bool paced = m_cfg.lineRateBps > 0 || rate < m_ep.Config().lineRateBps * (1 - 1e-9);
    if (paced && rate > 0)
    {
        m_pacer.OnTransmit(now, wireBytes, rate);
    }
    return true;
}

void
RoceV2Connection::AfterSend()
{
    if (m_sendPsn == m_nextPostPsn)
    {
        m_reqState = RequesterState::WAITING_ACK;
    }
    else if (m_sendPsn == m_maxSentPsn)
    {
        m_reqState = RequesterState::SENDING;
    }
}

void
RoceV2Connection::SyncRate(Time now)
{
    RoceRateChange change = m_rate->Advance(now);
    if (change.changed)
    {
        if (change.decreased)
        {
            Count(Counter::WINDOW_DECREASE);
        }
        if (m_ep.observer)
        {
            m_ep.observer->OnRateChange(now, m_qpn, change.rate);
        }
    }
    // A faster rate releases a paced packet earlier than the gap computed at the old rate
    // would; a slower one is applied from the next packet on (as a NIC's rate limiter).
}

void
RoceV2Connection::Locate(uint32_t psn)
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
    m_sendWqe = lo;
    m_sendPacket = uint32_t(PsnDiff(psn, m_sq[lo].firstPsn));
}

Time
RoceV2Connection::RtoValue() const
{
    if (m_irn)
    {
        Time base = InflightPackets() <= m_cfg.rocev2.irnLowThreshold ? m_cfg.rocev2.irnRtoLow
                                                                      : m_cfg.rocev2.irnRtoHigh;
        if (!m_cfg.rocev2.irnRtoBackoff)
        {
            return base;
        }
        // Back off on timeouts without progress (RFC 6298, 5.5), up to go-back-N's timer:
        // with IRN's fixed RTO_low/RTO_high under a round trip that grew above them (a deep
        // queue), every timeout resends into the same queue and retryCount timeouts in a row
        // end the connection. Progress resets the count, and so the back-off.
        uint32_t backoff = uint32_t(m_cfg.rocev2.retryCount - m_retriesLeft);
        Time ceiling = LocalAckTimeout(m_cfg.rocev2.localAckTimeout);
        return std::min<Time>(base << backoff, std::max(ceiling, base));
    }
    return LocalAckTimeout(m_cfg.rocev2.localAckTimeout);
}

void
RoceV2Connection::ArmRto(Time now)
{
    Time rto = RtoValue();
    m_rtoDeadline = rto == TIME_INFINITE ? TIME_INFINITE : now + rto;
}

void
RoceV2Connection::Complete(const SendWqe& w, WcStatus status)
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
    c.opcode = IsSend(w.wr.opcode) ? WcOpcode::SEND : WcOpcode::RDMA_WRITE;
    c.connectionId = m_qpn;
    c.byteLen = w.wr.sge.length;
    m_ep.PushCompletion(c);
}

void
RoceV2Connection::Progress(Time now, uint32_t newUnacked)
{
    if (m_irn)
    {
        // Forget the SACK bits of the PSNs now acknowledged cumulatively.
        for (uint32_t p = m_unackedPsn; p != newUnacked; p = PsnAdd(p, 1))
        {
            AssignBit(m_sacked, p & m_irnMask, false);
        }
    }
    m_unackedPsn = newUnacked;
    size_t done = 0;
    while (!m_sq.empty() &&
           PsnDiff(PsnAdd(m_sq.front().firstPsn, m_sq.front().numPackets), newUnacked) <= 0)
    {
        Complete(m_sq.front(), WcStatus::SUCCESS);
        m_sq.pop_front();
        ++done;
    }
    bool waiting = m_reqState == RequesterState::RNR_WAIT;
    if (PsnDiff(m_sendPsn, newUnacked) < 0)
    {
        Locate(newUnacked);
        if (!waiting && !m_irn)
        {
            AfterSend();
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
    if (m_unackedPsn == m_nextPostPsn && m_reqState != RequesterState::RNR_WAIT)
    {
        m_reqState = RequesterState::IDLE;
    }
    if (m_irn)
    {
        IrnSkipSacked();
        IrnUpdateState();
    }
}

void
RoceV2Connection::GoBack(Time now, uint32_t psn)
{
    if (m_irn)
    {
        IrnRestart(now, psn);
        return;
    }
    Count(Counter::GO_BACK_N);
    Locate(psn);
    m_reqState = psn == m_nextPostPsn  ? RequesterState::WAITING_ACK
                 : psn == m_maxSentPsn ? RequesterState::SENDING
                                       : RequesterState::RETRANSMITTING;
    if (m_unackedPsn == m_nextPostPsn)
    {
        m_reqState = RequesterState::IDLE;
    }
    ArmRto(now);
}

void
RoceV2Connection::HandleAck(Time now, const ParsedPacket& pkt)
{
    if (pkt.bth.opcode == IRN_NACK)
    {
        if (!m_irn)
        {
            Count(Counter::RX_INVALID); // the peer runs IRN, this QP go-back-N
            return;
        }
        HandleIrnNack(now, pkt);
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
            Progress(now, newUnacked);
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
    if (PsnDiff(psn, m_unackedPsn) > 0)
    {
        Progress(now, psn);
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
        m_reqState = RequesterState::RNR_WAIT;
        m_rnrPsn = psn;
        m_rnrDeadline = now + RnrTimerValue(value);
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

// ---------------------------------------------------------------------------------------------
// Responder
// ---------------------------------------------------------------------------------------------

PostStatus
RoceV2Connection::PostRecv(Time now, const RecvWr& wr, uint8_t* /*localPtr*/)
{
    m_now = now;
    if (wr.streamId != 0)
    {
        return PostStatus::INVALID_STREAM;
    }
    if (m_rq.size() >= m_cfg.maxPostedRecvs)
    {
        return PostStatus::QUEUE_FULL;
    }
    m_rq.push_back(PostedRecv{wr});
    return PostStatus::OK;
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
        HandleData(now, meta, pkt);
        break;
    case PacketKind::ACK:
        HandleAck(now, pkt);
        break;
    case PacketKind::CNP:
        Count(Counter::RX_CNP);
        m_rate->OnCnp(now);
        SyncRate(now);
        break;
    default:
        Count(Counter::RX_WRONG_TRANSPORT);
        break;
    }
}

void
RoceV2Connection::HandleData(Time now, const DatagramMeta& meta, const ParsedPacket& pkt)
{
    if (meta.ecn == Ecn::CE)
    {
        Count(Counter::ECN_CE_RECEIVED);
        if (m_rate->OnCeMarked(now))
        {
            m_cnpNow = true;
        }
    }
    m_ep.fairShare.NoteDataArrival(now, *this);
    if (m_irn)
    {
        HandleIrnData(now, pkt);
        return;
    }
    int32_t d = PsnDiff(pkt.bth.psn, m_ePsn);
    if (d < 0)
    {
        // Duplicate (C9-105): already executed; acknowledge again, at once.
        Count(Counter::RX_DUPLICATE);
        ScheduleAck(now, true);
        return;
    }
    if (d > 0)
    {
        Count(Counter::RX_OUT_OF_SEQUENCE);
        if (!m_nakEpisode)
        {
            m_nakEpisode = true;
            QueueNak(Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR, m_ePsn);
        }
        return;
    }
    m_nakEpisode = false;
    if (m_nakPending && m_nakSyndrome == (Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR))
    {
        m_nakPending = false; // the missing packet arrived before the NAK left
    }
    // An IRN packet at a go-back-N responder: the two ends disagree on the recovery mode.
    Exec result = (pkt.info->headers & HDR_IRH) ? Exec::INVALID : Execute(pkt);
    switch (result)
    {
    case Exec::OK: {
        m_ePsn = PsnAdd(m_ePsn, 1);
        Count(Counter::RX_DATA);
        ++m_unackedCount;
        bool immediate = pkt.bth.ackReq || m_unackedCount >= m_cfg.rocev2.ackEveryPackets;
        ScheduleAck(now, immediate);
        return;
    }
    default:
        if (result == Exec::RNR)
        {
            m_nakEpisode = true; // later packets are dropped silently until the resend
        }
        NakFor(result, pkt.bth.psn);
        return;
    }
}

RoceV2Connection::Exec
RoceV2Connection::Execute(const ParsedPacket& pkt)
{
    const OpcodeInfo& info = *pkt.info;
    MessagePosition pos = info.position;
    bool first = pos == MessagePosition::FIRST || pos == MessagePosition::ONLY;
    bool last = pos == MessagePosition::LAST || pos == MessagePosition::ONLY;
    uint32_t len = pkt.payloadLength;
    // Opcode sequence: First/Only between messages, Middle/Last of the same operation inside
    // one; anything else is an invalid request.
    if (!OpcodeFollows(info))
    {
        return Exec::INVALID;
    }
    // Payload lengths: First and Middle carry exactly one PMTU, Last 1..PMTU, Only 0..PMTU.
    if (len > m_cfg.mtu || (!last && len != m_cfg.mtu) ||
        (pos == MessagePosition::LAST && len == 0))
    {
        return Exec::INVALID;
    }
    if (info.write)
    {
        if (first)
        {
            const Reth& reth = pkt.reth;
            if (reth.dmaLength > m_cfg.maxMessageSize)
            {
                return Exec::INVALID;
            }
            // IB: a zero-length WRITE does not check the R_Key.
            uint8_t* unused = nullptr;
            if (reth.dmaLength > 0 && m_ep.memory.Check(reth.rkey,
                                                        reth.va,
                                                        reth.dmaLength,
                                                        ACCESS_REMOTE_WRITE,
                                                        &unused) != PostStatus::OK)
            {
                return Exec::ACCESS;
            }
            m_respVa = reth.va;
            m_respRkey = reth.rkey;
            m_respRemaining = reth.dmaLength;
            m_respLength = reth.dmaLength;
        }
        if (last ? len != m_respRemaining : len >= m_respRemaining)
        {
            return Exec::INVALID; // the packets do not add up to the DMA length
        }
        if (info.consumesRecv && m_rq.empty())
        {
            return Exec::RNR; // WRITE with immediate consumes a receive on its last packet
        }
        if (len > 0)
        {
            uint8_t* dst = nullptr;
            if (m_ep.memory.Check(m_respRkey, m_respVa, len, ACCESS_REMOTE_WRITE, &dst) !=
                PostStatus::OK)
            {
                return Exec::ACCESS; // deregistered mid-message
            }
            if (dst != nullptr)
            {
                std::memcpy(dst, pkt.payload, len);
            }
            Count(Counter::BYTES_PLACED, len);
        }
        m_respVa += len;
        m_respRemaining -= len;
        if (!last)
        {
            m_respState = ResponderState::IN_WRITE;
            return Exec::OK;
        }
        m_respState = ResponderState::IDLE;
        m_msn = PsnAdd(m_msn, 1);
        Count(Counter::MESSAGES_RECEIVED);
        if (info.consumesRecv)
        {
            Completion c;
            c.wrId = m_rq.front().wr.wrId;
            c.opcode = WcOpcode::RECV_RDMA_WITH_IMM;
            c.connectionId = m_qpn;
            c.byteLen = m_respLength;
            c.hasImm = true;
            c.immData = pkt.immDt;
            m_rq.pop_front();
            m_ep.PushCompletion(c);
        }
        return Exec::OK;
    }
    // SEND
    if (m_rq.empty())
    {
        return first ? Exec::RNR : Exec::INVALID;
    }
    if (first)
    {
        m_respOffset = 0;
    }
    PostedRecv& recv = m_rq.front();
    Exec placed = PlaceIntoRecv(recv, m_respOffset, pkt);
    if (placed != Exec::OK)
    {
        return placed;
    }
    m_respOffset += len;
    if (!last)
    {
        m_respState = ResponderState::IN_SEND;
        return Exec::OK;
    }
    m_respState = ResponderState::IDLE;
    m_msn = PsnAdd(m_msn, 1);
    Count(Counter::MESSAGES_RECEIVED);
    Completion c;
    c.wrId = recv.wr.wrId;
    c.opcode = WcOpcode::RECV;
    c.connectionId = m_qpn;
    c.byteLen = m_respOffset;
    c.hasImm = info.immediate;
    c.immData = info.immediate ? pkt.immDt : 0;
    m_rq.pop_front();
    m_ep.PushCompletion(c);
    return Exec::OK;
}

void
RoceV2Connection::QueueNak(uint8_t syndrome, uint32_t psn)
{
    m_nakPending = true;
    m_nakSyndrome = syndrome;
    m_nakPsn = psn;
}

void
RoceV2Connection::ScheduleAck(Time now, bool immediate)
{
    if (immediate || m_cfg.rocev2.ackDelay == 0)
    {
        m_ackNow = true;
        m_ackDeadline = TIME_INFINITE;
    }
    else if (m_ackDeadline == TIME_INFINITE)
    {
        m_ackDeadline = now + m_cfg.rocev2.ackDelay;
    }
}

bool
RoceV2Connection::SendAck(TxDatagram& out, uint8_t syndrome, uint32_t psn)
{
    ParsedPacket pkt;
    pkt.bth.opcode = RC_ACKNOWLEDGE;
    pkt.info = &LookupOpcode(RC_ACKNOWLEDGE);
    pkt.bth.destQp = m_remoteQpn;
    pkt.bth.psn = psn;
    pkt.aeth.syndrome = syndrome;
    pkt.aeth.msn = m_msn;
    if (!EmitDatagram(out, pkt, nullptr, 0, Ecn::NOT_ECT, m_srcPort))
    {
        return false;
    }
    out.meta.dscp = m_cfg.rocev2.dscp;
    return true;
}

bool
RoceV2Connection::SendCnp(TxDatagram& out)
{
    ParsedPacket pkt;
    pkt.bth.opcode = ROCE_CNP;
    pkt.info = &LookupOpcode(ROCE_CNP);
    pkt.bth.destQp = m_remoteQpn;
    pkt.bth.becn = true; // as ConnectX NICs send it
    pkt.bth.psn = 0;
    if (!EmitDatagram(out, pkt, nullptr, 0, Ecn::NOT_ECT, m_srcPort))
    {
        return false;
    }
    out.meta.dscp = m_cfg.rocev2.cnpDscp;
    Count(Counter::TX_CNP);
    return true;
}

// ---------------------------------------------------------------------------------------------
// IRN selective repeat (rocev2.recovery = "irn")
// ---------------------------------------------------------------------------------------------

uint32_t
RoceV2Connection::IrnCap() const
{
    uint32_t cap = m_cfg.rocev2.maxInflightPackets;
    uint32_t window = m_irnMask + 1;
    return (cap == 0 || cap > window) ? window : cap;
}

bool
RoceV2Connection::IrnSacked(uint32_t psn) const
{
    return TestBit(m_sacked, psn & m_irnMask);
}

bool
RoceV2Connection::IrnHolePending() const
{
    // IrnSkipSacked keeps m_retxPsn on an unSACKed, unacknowledged PSN (or at the bound).
    return PsnDiff(m_retxPsn, m_lossBound) < 0;
}

void
RoceV2Connection::IrnSkipSacked()
{
    if (PsnDiff(m_retxPsn, m_unackedPsn) < 0)
    {
        m_retxPsn = m_unackedPsn;
    }
    if (PsnDiff(m_lossBound, m_unackedPsn) < 0)
    {
        m_lossBound = m_unackedPsn;
    }
    while (PsnDiff(m_retxPsn, m_lossBound) < 0 && IrnSacked(m_retxPsn))
    {
        m_retxPsn = PsnAdd(m_retxPsn, 1);
    }
}

void
RoceV2Connection::IrnSelectPsn()
{
    uint32_t psn = IrnHolePending() ? m_retxPsn : m_maxSentPsn;
    if (psn != m_sendPsn)
    {
        Locate(psn);
    }
}

void
RoceV2Connection::IrnRestart(Time now, uint32_t psn)
{
    // Timeout (or the end of an RNR wait): every unSACKed PSN from psn up to the highest
    // sent is presumed lost and resent once more; SACKed ones are not.
    m_retxPsn = psn;
    m_lossBound = m_maxSentPsn;
    IrnSkipSacked();
    ArmRto(now);
    IrnUpdateState();
}

void
RoceV2Connection::IrnUpdateState()
{
    if (m_reqState == RequesterState::ERROR || m_reqState == RequesterState::RNR_WAIT)
    {
        return;
    }
    if (m_unackedPsn == m_nextPostPsn)
    {
        m_reqState = RequesterState::IDLE;
    }
    else if (IrnHolePending())
    {
        m_reqState = RequesterState::RETRANSMITTING;
    }
    else if (m_maxSentPsn != m_nextPostPsn)
    {
        m_reqState = RequesterState::SENDING;
    }
    else
    {
        m_reqState = RequesterState::WAITING_ACK;
    }
}

void
RoceV2Connection::HandleIrnNack(Time now, const ParsedPacket& pkt)
{
    Count(Counter::RX_NAK);
    uint32_t cum = pkt.bth.psn;
    uint32_t sack = pkt.ish.sackPsn;
    // Distances from the oldest unacknowledged PSN, so that PSNs far outside the
    // outstanding range cannot pass as inside it through the modular comparison.
    uint32_t outstanding = InflightPackets();
    uint32_t cumAhead = (cum - m_unackedPsn) & PSN_MASK;
    uint32_t sackAhead = (sack - m_unackedPsn) & PSN_MASK;
    bool cumOld = cumAhead > outstanding && PsnDiff(cum, m_unackedPsn) < 0;
    // The SACKed PSN arrived ahead of the cumulative one, and both were sent. An older NACK
    // (cum below the oldest unacknowledged PSN) still carries a useful SACK.
    if (pkt.aeth.syndrome != (Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR) ||
        PsnDiff(sack, cum) <= 0 || (cumAhead > outstanding && !cumOld) ||
        (sackAhead >= outstanding && PsnDiff(sack, m_unackedPsn) >= 0))
    {
        Count(Counter::RX_INVALID);
        return;
    }
    if (!cumOld && cumAhead > 0)
    {
        Progress(now, cum);
    }
    if (PsnDiff(sack, m_unackedPsn) < 0 || m_reqState == RequesterState::ERROR)
    {
        return; // acknowledged meanwhile
    }
    AssignBit(m_sacked, sack & m_irnMask, true);
    if (PsnDiff(sack, m_lossBound) > 0)
    {
        // Every unSACKed PSN below the highest SACKed one is lost (IRN's rule): count the
        // newly revealed ones; they go out before any new PSN.
        uint32_t from = PsnDiff(m_retxPsn, m_lossBound) > 0 ? m_retxPsn : m_lossBound;
        for (uint32_t p = from; PsnDiff(p, sack) < 0; p = PsnAdd(p, 1))
        {
            if (!IrnSacked(p))
            {
                Count(Counter::LOSS_DETECTED);
            }
        }
        m_lossBound = sack;
    }
    IrnSkipSacked();
    IrnUpdateState();
}

bool
RoceV2Connection::SendIrnNack(TxDatagram& out, uint32_t sackPsn)
{
    ParsedPacket pkt;
    pkt.bth.opcode = IRN_NACK;
    pkt.info = &LookupOpcode(IRN_NACK);
    pkt.bth.destQp = m_remoteQpn;
    pkt.bth.psn = m_ePsn;
    pkt.aeth.syndrome = Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR;
    pkt.aeth.msn = m_msn;
    pkt.ish.sackPsn = sackPsn;
    if (!EmitDatagram(out, pkt, nullptr, 0, Ecn::NOT_ECT, m_srcPort))
    {
        return false;
    }
    out.meta.dscp = m_cfg.rocev2.dscp;
    return true;
}

void
RoceV2Connection::IrnQueueNack(uint32_t sackPsn)
{
    if (m_nackCount > m_irnMask)
    {
        return; // ring full (a window of NACKs not yet sent): the SACK is only advisory
    }
    m_nackQueue[(m_nackHead + m_nackCount) & m_irnMask] = sackPsn;
    ++m_nackCount;
}

void
RoceV2Connection::NakFor(Exec result, uint32_t psn)
{
    switch (result)
    {
    case Exec::OK:
        return;
    case Exec::RNR:
        Count(Counter::RX_RNR);
        QueueNak(Aeth::TYPE_RNR_NAK | (m_cfg.rocev2.minRnrTimer & Aeth::VALUE_MASK), psn);
        return;
    case Exec::ACCESS:
        Count(Counter::RX_ACCESS_ERROR);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_REMOTE_ACCESS_ERROR, psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::WR_FLUSH_ERR);
        return;
    case Exec::LENGTH:
        Count(Counter::RX_INVALID);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_INVALID_REQUEST, psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::LOC_LEN_ERR);
        return;
    case Exec::LOCAL_PROT:
        Count(Counter::RX_ACCESS_ERROR);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_REMOTE_OPERATIONAL_ERROR, psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::LOC_PROT_ERR);
        return;
    case Exec::INVALID:
        Count(Counter::RX_INVALID);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_INVALID_REQUEST, psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::WR_FLUSH_ERR);
        return;
    }
}

void
RoceV2Connection::HandleIrnData(Time now, const ParsedPacket& pkt)
{
    uint32_t psn = pkt.bth.psn;
    int32_t d = PsnDiff(psn, m_ePsn);
    if (d < 0)
    {
        Count(Counter::RX_DUPLICATE); // already delivered: acknowledge again, at once
        ScheduleAck(now, true);
        return;
    }
    if ((pkt.info->headers & HDR_IRH) == 0 || uint32_t(d) > m_irnMask)
    {
        // A go-back-N packet (the ends disagree on the mode): invalid when it is due. Past
        // the bitmap: dropped unSACKed; the sender never gets that far ahead (BDP cap).
        if (d == 0)
        {
            NakFor(Exec::INVALID, psn);
        }
        else
        {
            Count(Counter::RX_OUT_OF_SEQUENCE);
        }
        return;
    }
    uint32_t index = psn & m_irnMask;
    if (d > 0 && TestBit(m_placed, index))
    {
        Count(Counter::RX_DUPLICATE); // placed already: SACK it again
        IrnQueueNack(psn);
        return;
    }
    Exec result = IrnPlace(pkt);
    if (result != Exec::OK)
    {
        if (d > 0)
        {
            // Not placed and not SACKed: judged again when it is the expected PSN.
            Count(Counter::RX_OUT_OF_SEQUENCE);
            return;
        }
        NakFor(result, psn);
        return;
    }
    Count(Counter::RX_DATA);
    IrnSlot& slot = m_slots[index];
    slot.opcode = pkt.bth.opcode;
    slot.ackReq = pkt.bth.ackReq;
    slot.recvWqeSn = pkt.irh.recvWqeSn;
    slot.endOffset = pkt.irh.offset + pkt.payloadLength;
    slot.dmaLength = pkt.reth.dmaLength;
    slot.immDt = pkt.immDt;
    AssignBit(m_placed, index, true);
    if (d > 0)
    {
        Count(Counter::RX_OUT_OF_SEQUENCE);
        IrnQueueNack(psn);
        return;
    }
    // In order: deliver the run of placed PSNs from ePSN on, completing messages in order.
    uint32_t advanced = 0;
    bool ackReq = false;
    while (TestBit(m_placed, m_ePsn & m_irnMask))
    {
        uint32_t i = m_ePsn & m_irnMask;
        AssignBit(m_placed, i, false);
        Exec e = IrnDeliver(m_slots[i]);
        if (e != Exec::OK)
        {
            NakFor(e, m_ePsn);
            return;
        }
        ackReq = ackReq || m_slots[i].ackReq;
        m_ePsn = PsnAdd(m_ePsn, 1);
        ++advanced;
        ++m_unackedCount;
    }
    // A filled hole is acknowledged at once: the sender is waiting on it.
    ScheduleAck(now, ackReq || advanced > 1 || m_unackedCount >= m_cfg.rocev2.ackEveryPackets);
}

RoceV2Connection::Exec
RoceV2Connection::IrnPlace(const ParsedPacket& pkt)
{
    const OpcodeInfo& info = *pkt.info;
    MessagePosition pos = info.position;
    bool first = pos == MessagePosition::FIRST || pos == MessagePosition::ONLY;
    bool last = pos == MessagePosition::LAST || pos == MessagePosition::ONLY;
    uint32_t len = pkt.payloadLength;
    uint32_t offset = pkt.irh.offset;
    uint64_t end = uint64_t(offset) + len;
    // The packet describes its own place: First/Only at offset 0, others on a PMTU boundary;
    // lengths as in go-back-N (First and Middle one PMTU, Last 1..PMTU).
    if (len > m_cfg.mtu || (!last && len != m_cfg.mtu) ||
        (pos == MessagePosition::LAST && len == 0) || first != (offset == 0) ||
        (offset % m_cfg.mtu) != 0 || end > m_cfg.maxMessageSize)
    {
        return Exec::INVALID;
    }
    if (info.write)
    {
        const Reth& reth = pkt.reth;
        if (reth.dmaLength > m_cfg.maxMessageSize ||
            (last ? end != reth.dmaLength : end >= reth.dmaLength))
        {
            return Exec::INVALID;
        }
        // Every IRN WRITE packet carries the message's RETH: check the whole range on each,
        // so that a Middle that arrives before its First is never placed when the message is
        // partly outside the region.
        uint8_t* dst = nullptr;
        if (reth.dmaLength > 0 &&
            m_ep.memory.Check(reth.rkey, reth.va, reth.dmaLength, ACCESS_REMOTE_WRITE, &dst) !=
                PostStatus::OK)
        {
            return Exec::ACCESS;
        }
        if (info.consumesRecv && pkt.irh.recvWqeSn - m_rqBaseSn >= m_rq.size())
        {
            return Exec::RNR;
        }
        if (len > 0)
        {
            if (m_ep.memory.Check(reth.rkey, reth.va + offset, len, ACCESS_REMOTE_WRITE, &dst) !=
                PostStatus::OK)
            {
                return Exec::ACCESS;
            }
            if (dst != nullptr)
            {
                std::memcpy(dst, pkt.payload, len);
            }
            Count(Counter::BYTES_PLACED, len);
        }
        return Exec::OK;
    }
    // SEND: into the receive WQE the packet names (receives are consumed in order).
    uint32_t k = pkt.irh.recvWqeSn - m_rqBaseSn;
    if (k >= m_rq.size())
    {
        return first ? Exec::RNR : Exec::INVALID;
    }
    return PlaceIntoRecv(m_rq[k], offset, pkt);
}

RoceV2Connection::Exec
RoceV2Connection::PlaceIntoRecv(const PostedRecv& recv, uint32_t offset, const ParsedPacket& pkt)
{
    uint32_t len = pkt.payloadLength;
    if (uint64_t(offset) + len > recv.wr.sge.length)
    {
        return Exec::LENGTH;
    }
    if (len == 0)
    {
        return Exec::OK;
    }
    // The receive buffer is looked up again for every packet: a region deregistered after
    // the post is never written (IB: local protection error).
    uint8_t* dst = nullptr;
    if (m_ep.memory.Check(recv.wr.sge.lkey,
                          recv.wr.sge.addr + offset,
                          len,
                          ACCESS_LOCAL_WRITE,
                          &dst) != PostStatus::OK)
    {
        return Exec::LOCAL_PROT;
    }
    if (dst != nullptr)
    {
        std::memcpy(dst, pkt.payload, len);
    }
    Count(Counter::BYTES_PLACED, len);
    return Exec::OK;
}

bool
RoceV2Connection::OpcodeFollows(const OpcodeInfo& info) const
{
    const bool first =
        info.position == MessagePosition::FIRST || info.position == MessagePosition::ONLY;
    switch (m_respState)
    {
    case ResponderState::IDLE:
        return first;
    case ResponderState::IN_WRITE:
        return !first && info.write;
    case ResponderState::IN_SEND:
        return !first && !info.write;
    case ResponderState::ERROR:
        return false;
    }
    return false;
}

RoceV2Connection::Exec
RoceV2Connection::IrnDeliver(const IrnSlot& slot)
{
    const OpcodeInfo& info = LookupOpcode(slot.opcode);
    MessagePosition pos = info.position;
    bool first = pos == MessagePosition::FIRST || pos == MessagePosition::ONLY;
    bool last = pos == MessagePosition::LAST || pos == MessagePosition::ONLY;
    // The opcode sequence is checked in PSN order, as go-back-N checks it on arrival.
    if (!OpcodeFollows(info))
    {
        return Exec::INVALID;
    }
    if (!info.write)
    {
        if (first)
        {
            m_irnMsgSn = slot.recvWqeSn;
        }
        else if (slot.recvWqeSn != m_irnMsgSn)
        {
            return Exec::INVALID; // one SEND, one receive
        }
    }
    if (!last)
    {
        m_respState = info.write ? ResponderState::IN_WRITE : ResponderState::IN_SEND;
        return Exec::OK;
    }
    m_respState = ResponderState::IDLE;
    if (info.consumesRecv && (m_rq.empty() || slot.recvWqeSn != m_rqBaseSn))
    {
        return Exec::INVALID; // receives complete in post order
    }
    m_msn = PsnAdd(m_msn, 1);
    Count(Counter::MESSAGES_RECEIVED);
    if (info.consumesRecv)
    {
        Completion c;
        c.wrId = m_rq.front().wr.wrId;
        c.opcode = info.write ? WcOpcode::RECV_RDMA_WITH_IMM : WcOpcode::RECV;
        c.connectionId = m_qpn;
        c.byteLen = info.write ? slot.dmaLength : slot.endOffset;
        c.hasImm = info.immediate;
        c.immData = info.immediate ? slot.immDt : 0;
        m_rq.pop_front();
        ++m_rqBaseSn;
        m_ep.PushCompletion(c);
    }
    return Exec::OK;
}

// ---------------------------------------------------------------------------------------------
// Errors and timers
// ---------------------------------------------------------------------------------------------

void
RoceV2Connection::EnterError(WcStatus sendStatus, uint32_t failedPsn, WcStatus recvStatus)
{
    // The request holding failedPsn (if any) gets sendStatus; every other outstanding
    // request is flushed, in post order.
    for (const SendWqe& w : m_sq)
    {
        bool failed = sendStatus != WcStatus::WR_FLUSH_ERR && PsnDiff(failedPsn, w.firstPsn) >= 0 &&
                      PsnDiff(failedPsn, PsnAdd(w.firstPsn, w.numPackets)) < 0;
        Complete(w, failed ? sendStatus : WcStatus::WR_FLUSH_ERR);
    }
    m_sq.clear();
    bool firstRecv = true;
    for (const PostedRecv& r : m_rq)
    {
        Completion c;
        c.wrId = r.wr.wrId;
        c.status = firstRecv ? recvStatus : WcStatus::WR_FLUSH_ERR;
        c.opcode = WcOpcode::RECV;
        c.connectionId = m_qpn;
        m_ep.PushCompletion(c);
        firstRecv = false;
    }
    m_rq.clear();
    m_error = true;
    m_reqState = RequesterState::ERROR;
    m_respState = ResponderState::ERROR;
    m_rtoDeadline = TIME_INFINITE;
    m_rnrDeadline = TIME_INFINITE;
    m_ackDeadline = TIME_INFINITE;
    m_ackNow = false;
    m_cnpNow = false;
    m_nackCount = 0;
}

Time
RoceV2Connection::NextDeadline() const
{
    if (m_error)
    {
        return TIME_INFINITE;
    }
    Time t = std::min(m_rtoDeadline, m_ackDeadline);
    if (m_reqState == RequesterState::RNR_WAIT)
    {
        t = std::min(t, m_rnrDeadline);
    }
    bool dataPending =
        m_reqState == RequesterState::SENDING || m_reqState == RequesterState::RETRANSMITTING;
    if (dataPending && m_pacer.NextRelease() > m_now)
    {
        t = std::min(t, m_pacer.NextRelease()); // pacing release: a condition, so only if ahead
    }
    return t;
}

void
RoceV2Connection::HandleTimeout(Time now)
{
    m_now = now;
    if (m_error)
    {
        return;
    }
    SyncRate(now);
    if (m_ackDeadline <= now)
    {
        m_ackDeadline = TIME_INFINITE;
        m_ackNow = true;
    }
    if (m_reqState == RequesterState::RNR_WAIT && m_rnrDeadline <= now)
    {
        m_rnrDeadline = TIME_INFINITE;
        m_reqState = RequesterState::SENDING;
        GoBack(now, m_rnrPsn);
    }
    if (m_rtoDeadline <= now)
    {
        m_rtoDeadline = TIME_INFINITE;
        if (m_unackedPsn == m_maxSentPsn)
        {
            return; // nothing outstanding (disarmed late)
        }
        Count(Counter::RTO);
        if (m_retriesLeft == 0)
        {
            EnterError(WcStatus::RETRY_EXC_ERR, m_unackedPsn, WcStatus::WR_FLUSH_ERR);
            return;
        }
        --m_retriesLeft;
        GoBack(now, m_unackedPsn);
    }
}

} // namespace metaroce
