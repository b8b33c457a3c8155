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
      m_rp(cfg.rocev2, cfg.lineRateBps > 0 ? cfg.lineRateBps : ep.Config().lineRateBps),
      m_maxRate(cfg.lineRateBps > 0 ? cfg.lineRateBps : ep.Config().lineRateBps),
      m_srcPort(cfg.sourcePortBase != 0 ? cfg.sourcePortBase
                                        : uint16_t(EPHEMERAL_PORT_BASE + ep.rng.Below(16384))),
      m_np(cfg.rocev2.cnpInterval)
{
}

size_t
RoceV2Connection::StateBytes() const
{
    return sizeof(*this) + m_sq.size() * sizeof(SendWqe) + m_rq.size() * sizeof(PostedRecv);
}

double
RoceV2Connection::PacingRate() const
{
    return m_cfg.rocev2.dcqcn ? m_rp.Rate() : m_maxRate;
}

// ---------------------------------------------------------------------------------------------
// Requester
// ---------------------------------------------------------------------------------------------

PostStatus
RoceV2Connection::PostSend(Time now, const SendWr& wr, const uint8_t* localPtr)
{
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
    w.localPtr = localPtr;
    w.firstPsn = m_nextPostPsn;
    w.numPackets = packets;
    m_sq.push_back(w);
    m_nextPostPsn = PsnAdd(m_nextPostPsn, packets);
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
    if (now < m_nextSendTime)
    {
        return false;
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
    return m_cnpNow || m_ackNow || MayTransmitData(now);
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
    const SendWqe& w = m_sq[m_sendWqe];
    uint32_t packet = m_sendPacket;
    uint32_t offset = packet * m_cfg.mtu;
    uint32_t length = std::min(m_cfg.mtu, w.wr.sge.length - offset);
    ParsedPacket pkt;
    pkt.bth.opcode = OpcodeOf(w, packet);
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
    const uint8_t* payload = w.localPtr ? w.localPtr + offset : nullptr;
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
    AfterSend();
    uint64_t wireBytes = out.length + WIRE_OVERHEAD_BYTES;
    if (m_cfg.rocev2.dcqcn)
    {
        m_rp.OnBytesSent(now, out.length);
        SyncRate(now);
    }
    double rate = PacingRate();
    bool paced = m_cfg.lineRateBps > 0 || rate < m_ep.Config().lineRateBps * (1 - 1e-9);
    if (paced && rate > 0)
    {
        m_nextSendTime = std::max(now, m_nextSendTime) + TransmissionTime(wireBytes, rate);
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
    if (!m_cfg.rocev2.dcqcn)
    {
        return;
    }
    m_rp.Advance(now);
    double rate = m_rp.Rate();
    if (rate != m_notifiedRate)
    {
        if (m_notifiedRate >= 0 && rate < m_notifiedRate)
        {
            Count(Counter::WINDOW_DECREASE);
        }
        m_notifiedRate = rate;
        if (m_ep.observer)
        {
            m_ep.observer->OnRateChange(now, m_qpn, rate);
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
        if (!waiting)
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
}

void
RoceV2Connection::GoBack(Time now, uint32_t psn)
{
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
RoceV2Connection::PostRecv(Time now, const RecvWr& wr, uint8_t* localPtr)
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
    m_rq.push_back(PostedRecv{wr, localPtr});
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
        if (m_cfg.rocev2.dcqcn)
        {
            m_rp.OnCnp(now);
            SyncRate(now);
        }
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
        if (m_cfg.rocev2.dcqcn && m_np.OnCeMarked(now))
        {
            m_cnpNow = true;
        }
    }
    m_ep.NoteDataArrival(now, *this);
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
    Exec result = Execute(pkt);
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
    case Exec::RNR:
        Count(Counter::RX_RNR);
        m_nakEpisode = true; // later packets are dropped silently until the resend
        QueueNak(Aeth::TYPE_RNR_NAK | (m_cfg.rocev2.minRnrTimer & Aeth::VALUE_MASK), pkt.bth.psn);
        return;
    case Exec::ACCESS:
        Count(Counter::RX_ACCESS_ERROR);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_REMOTE_ACCESS_ERROR, pkt.bth.psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::WR_FLUSH_ERR);
        return;
    case Exec::LENGTH:
        Count(Counter::RX_INVALID);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_INVALID_REQUEST, pkt.bth.psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::LOC_LEN_ERR);
        return;
    case Exec::INVALID:
        Count(Counter::RX_INVALID);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_INVALID_REQUEST, pkt.bth.psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::WR_FLUSH_ERR);
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
    switch (m_respState)
    {
    case ResponderState::IDLE:
        if (!first)
        {
            return Exec::INVALID;
        }
        break;
    case ResponderState::IN_WRITE:
        if (first || !info.write)
        {
            return Exec::INVALID;
        }
        break;
    case ResponderState::IN_SEND:
        if (first || info.write)
        {
            return Exec::INVALID;
        }
        break;
    case ResponderState::ERROR:
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
    if (uint64_t(m_respOffset) + len > recv.wr.sge.length)
    {
        return Exec::LENGTH;
    }
    if (len > 0)
    {
        if (recv.ptr != nullptr)
        {
            std::memcpy(recv.ptr + m_respOffset, pkt.payload, len);
        }
        Count(Counter::BYTES_PLACED, len);
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
    if (dataPending && m_nextSendTime > m_now)
    {
        t = std::min(t, m_nextSendTime); // pacing release: a condition, so only if ahead
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
