/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rocev2-responder.h"

#include "metaroce-rocev2-connection.h"

#include <algorithm>
#include <cstring>

namespace metaroce
{

RoceResponder::RoceResponder(RoceV2Connection& conn)
    : RoceV2Role(conn),
      m_receiver(CreateRoceRecoveryReceiver(m_cfg.rocev2.recovery, m_cfg))
{
}

size_t
RoceResponder::HeapBytes() const
{
    return m_rq.size() * sizeof(PostedRecv) + m_receiver->HeapBytes() +
           m_responses.size() * sizeof(Response) + m_atomicResults.size() * sizeof(AtomicResult);
}

PostStatus
RoceResponder::PostRecv(const RecvWr& wr)
{
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
RoceResponder::HandleData(Time now, const DatagramMeta& meta, const ParsedPacket& pkt)
{
    if (meta.ecn == Ecn::CE)
    {
        Count(Counter::ECN_CE_RECEIVED);
        if (RateControl().OnCeMarked(now))
        {
            m_cnpNow = true;
        }
    }
    m_ep.fairShare.NoteDataArrival(now, m_conn);
    if (pkt.info->read || pkt.info->atomic)
    {
        HandleRequest(now, pkt);
        return;
    }
    m_receiver->HandleData(now, *this, pkt);
}

void
RoceResponder::HandleRequest(Time now, const ParsedPacket& pkt)
{
    if (m_responses.empty())
    {
        // Sized once, on the first READ or atomic: a queue pair that never sees one keeps
        // its WRITE/SEND-only footprint.
        m_responses.resize(2 * size_t(m_cfg.rocev2.maxRdAtomic));
        m_atomicResults.resize(m_cfg.rocev2.maxRdAtomic);
    }
    uint32_t psn = pkt.bth.psn;
    int32_t d = PsnDiff(psn, m_ePsn);
    if (d > 0)
    {
        m_receiver->HandleData(now, *this, pkt); // out of sequence, as any other packet
        return;
    }
    if (d < 0)
    {
        Count(Counter::RX_DUPLICATE);
        HandleDuplicateRequest(pkt);
        return;
    }
    RoceExec result = !OpcodeFollows(*pkt.info) ? RoceExec::INVALID
                      : pkt.info->read          ? ExecuteRead(pkt, false)
                                                : ExecuteAtomic(pkt);
    if (result != RoceExec::OK)
    {
        NakFor(result, psn);
        return;
    }
    Count(Counter::RX_DATA);
    EndMessage();
    // The response acknowledges every PSN before it: no ACK of its own for them.
    m_ackNow = false;
    m_ackDeadline = TIME_INFINITE;
    m_unackedCount = 0;
    m_receiver->OnRequestExecuted(now, *this);
}

void
RoceResponder::HandleDuplicateRequest(const ParsedPacket& pkt)
{
    // The requester may have discarded ACKs past the request it asks about again: after the
    // responses, acknowledge everything executed so far.
    m_ackNow = true;
    // IB's duplicate-request rules: a duplicate READ is served again, from memory as it is
    // now; a duplicate atomic is answered with the saved result and never executed again.
    // Duplicates share half of the response ring, so that they never crowd out new requests.
    uint32_t psn = pkt.bth.psn;
    if (Responding(psn) || m_responseCount >= m_cfg.rocev2.maxRdAtomic)
    {
        return; // its responses are on their way; or no room: the requester asks again
    }
    if (pkt.info->atomic)
    {
        for (const AtomicResult& a : m_atomicResults)
        {
            if (a.valid && a.psn == psn)
            {
                Response r;
                r.psn = psn;
                r.atomic = true;
                r.resend = true;
                r.original = a.original;
                QueueResponse(r);
                return;
            }
        }
        Count(Counter::RX_INVALID); // older than the replay cache: stale, never run again
        return;
    }
    uint32_t packets = std::max<uint32_t>(1, (pkt.reth.dmaLength + m_cfg.mtu - 1) / m_cfg.mtu);
    if (pkt.reth.dmaLength > m_cfg.maxMessageSize || PsnDiff(PsnAdd(psn, packets), m_ePsn) > 0)
    {
        Count(Counter::RX_INVALID); // not the rest of a READ executed before
        return;
    }
    RoceExec result = ExecuteRead(pkt, true);
    if (result != RoceExec::OK)
    {
        NakFor(result, psn);
    }
}

bool
RoceResponder::Responding(uint32_t psn) const
{
    for (size_t i = 0; i < m_responseCount; ++i)
    {
        const Response& r = m_responses[(m_responseHead + i) % m_responses.size()];
        if (PsnDiff(psn, PsnAdd(r.psn, r.next)) >= 0 && PsnDiff(psn, PsnAdd(r.psn, r.packets)) < 0)
        {
            return true;
        }
    }
    return false;
}

bool
RoceResponder::QueueResponse(const Response& r)
{
    if (m_responseCount == m_responses.size())
    {
        return false;
    }
    m_responses[(m_responseHead + m_responseCount) % m_responses.size()] = r;
    ++m_responseCount;
    return true;
}

RoceExec
RoceResponder::ExecuteRead(const ParsedPacket& pkt, bool resend)
{
    const Reth& reth = pkt.reth;
    if (reth.dmaLength > m_cfg.maxMessageSize || m_responseCount == m_responses.size())
    {
        return RoceExec::INVALID; // too long, or beyond the responder's resources
    }
    // IB: a zero-length READ does not check the R_Key.
    uint8_t* unused = nullptr;
    if (reth.dmaLength > 0 &&
        m_ep.memory.Check(reth.rkey, reth.va, reth.dmaLength, ACCESS_REMOTE_READ, &unused) !=
            PostStatus::OK)
    {
        return RoceExec::ACCESS;
    }
    Response r;
    r.psn = pkt.bth.psn;
    r.packets = std::max<uint32_t>(1, (reth.dmaLength + m_cfg.mtu - 1) / m_cfg.mtu);
    r.va = reth.va;
    r.rkey = reth.rkey;
    r.length = reth.dmaLength;
    r.resend = resend;
    QueueResponse(r);
    if (!resend)
    {
        m_ePsn = PsnAdd(m_ePsn, r.packets); // one PSN per response packet
    }
    return RoceExec::OK;
}

RoceExec
RoceResponder::ExecuteAtomic(const ParsedPacket& pkt)
{
    const AtomicEth& a = pkt.atomicEth;
    if (m_responseCount == m_responses.size() || (a.va % ATOMIC_OPERAND_SIZE) != 0)
    {
        return RoceExec::INVALID; // beyond the responder's resources, or misaligned
    }
    uint8_t* word = nullptr;
    if (m_ep.memory.Check(a.rkey, a.va, ATOMIC_OPERAND_SIZE, ACCESS_REMOTE_ATOMIC, &word) !=
        PostStatus::OK)
    {
        return RoceExec::ACCESS;
    }
    uint64_t original = ApplyAtomic(word, pkt.bth.opcode == RC_CMP_SWAP, a.compare, a.swapAdd);
    AtomicResult& saved = m_atomicResults[m_atomicNext];
    m_atomicNext = (m_atomicNext + 1) % m_atomicResults.size();
    saved.valid = true;
    saved.psn = pkt.bth.psn;
    saved.original = original;
    Response r;
    r.psn = pkt.bth.psn;
    r.atomic = true;
    r.original = original;
    QueueResponse(r);
    m_ePsn = PsnAdd(m_ePsn, 1);
    return RoceExec::OK;
}

bool
RoceResponder::SendResponse(TxDatagram& out)
{
    Response& r = m_responses[m_responseHead];
    ParsedPacket pkt;
    pkt.bth.destQp = RemoteQpn();
    pkt.bth.psn = PsnAdd(r.psn, r.next);
    pkt.aeth.syndrome = Aeth::TYPE_ACK | Aeth::CREDITS_INVALID;
    pkt.aeth.msn = m_msn;
    const uint8_t* payload = nullptr;
    uint32_t len = 0;
    Ecn ecn = Ecn::NOT_ECT;
    if (r.atomic)
    {
        pkt.bth.opcode = RC_ATOMIC_ACKNOWLEDGE;
        pkt.atomicAckEth.original = r.original;
    }
    else
    {
        uint32_t offset = r.next * m_cfg.mtu;
        len = std::min(m_cfg.mtu, r.length - offset);
        pkt.bth.opcode = r.packets == 1            ? RC_READ_RESPONSE_ONLY
                         : r.next == 0             ? RC_READ_RESPONSE_FIRST
                         : r.next + 1 == r.packets ? RC_READ_RESPONSE_LAST
                                                   : RC_READ_RESPONSE_MIDDLE;
        uint8_t* src = nullptr;
        if (len > 0 && m_ep.memory.Check(r.rkey, r.va + offset, len, ACCESS_REMOTE_READ, &src) !=
                           PostStatus::OK)
        {
            // Deregistered while the responses were going out.
            NakFor(RoceExec::ACCESS, pkt.bth.psn);
            return SendNak(out);
        }
        payload = src;
        ecn = Ecn::ECT0; // READ data, subject to congestion marking as WRITE data is
    }
    pkt.info = &LookupOpcode(pkt.bth.opcode);
    if (!Emit(out, pkt, payload, len, ecn, m_cfg.rocev2.dscp))
    {
        return false;
    }
    Count(r.resend ? Counter::TX_RETRANSMIT : r.atomic ? Counter::TX_ACK : Counter::TX_DATA);
    if (++r.next == r.packets)
    {
        m_responseHead = (m_responseHead + 1) % m_responses.size();
        --m_responseCount;
    }
    return true;
}

bool
RoceResponder::SendNak(TxDatagram& out)
{
    m_nakPending = false;
    m_ackNow = false; // the NAK's PSN acknowledges everything before it
    m_unackedCount = 0;
    m_ackDeadline = TIME_INFINITE;
    Count(Counter::TX_NAK);
    return SendAck(out, m_nakSyndrome, m_nakPsn);
}

bool
RoceResponder::PollControl(TxDatagram& out, bool& sent)
{
    if (m_cnpNow)
    {
        m_cnpNow = false;
        sent = SendCnp(out);
        return true;
    }
    if (m_responseCount > 0)
    {
        sent = SendResponse(out);
        return true;
    }
    if (m_receiver->PollNack(*this, out, sent))
    {
        return true;
    }
    if (m_ackNow)
    {
        m_ackNow = false;
        m_unackedCount = 0;
        m_ackDeadline = TIME_INFINITE;
        Count(Counter::TX_ACK);
        sent = SendAck(out, Aeth::TYPE_ACK | Aeth::CREDITS_INVALID, PsnAdd(m_ePsn, PSN_MASK));
        return true;
    }
    return false;
}

bool
RoceResponder::SendSelectiveNack(TxDatagram& out, uint32_t sackPsn)
{
    // The NACK's PSN (ePSN) acknowledges everything before it, as an ACK would.
    m_ackNow = false;
    m_unackedCount = 0;
    m_ackDeadline = TIME_INFINITE;
    Count(Counter::TX_NAK);
    ParsedPacket pkt;
    pkt.bth.opcode = IRN_NACK;
    pkt.info = &LookupOpcode(IRN_NACK);
    pkt.bth.destQp = RemoteQpn();
    pkt.bth.psn = m_ePsn;
    pkt.aeth.syndrome = Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR;
    pkt.aeth.msn = m_msn;
    pkt.ish.sackPsn = sackPsn;
    return Emit(out, pkt, nullptr, 0, Ecn::NOT_ECT, m_cfg.rocev2.dscp);
}

void
RoceResponder::HandleTimeout(Time now)
{
    if (m_ackDeadline <= now)
    {
        m_ackDeadline = TIME_INFINITE;
        m_ackNow = true;
    }
}

void
RoceResponder::FlushAfterError(WcStatus status)
{
    bool first = true;
    for (const PostedRecv& r : m_rq)
    {
        Completion c;
        c.wrId = r.wr.wrId;
        c.status = first ? status : WcStatus::WR_FLUSH_ERR;
        c.opcode = WcOpcode::RECV;
        c.connectionId = Qpn();
        m_ep.PushCompletion(c);
        first = false;
    }
    m_rq.clear();
    m_state = RoceResponderState::ERROR;
    m_ackDeadline = TIME_INFINITE;
    m_ackNow = false;
    m_cnpNow = false;
    m_responseCount = 0;
    m_receiver->Clear();
}

void
RoceResponder::QueueNak(uint8_t syndrome, uint32_t psn)
{
    m_nakPending = true;
    m_nakSyndrome = syndrome;
    m_nakPsn = psn;
}

void
RoceResponder::CancelSequenceNak()
{
    if (m_nakPending && m_nakSyndrome == (Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR))
    {
        m_nakPending = false;
    }
}

void
RoceResponder::ScheduleAck(Time now, bool immediate)
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
RoceResponder::SendAck(TxDatagram& out, uint8_t syndrome, uint32_t psn)
{
    ParsedPacket pkt;
    pkt.bth.opcode = RC_ACKNOWLEDGE;
    pkt.info = &LookupOpcode(RC_ACKNOWLEDGE);
    pkt.bth.destQp = RemoteQpn();
    pkt.bth.psn = psn;
    pkt.aeth.syndrome = syndrome;
    pkt.aeth.msn = m_msn;
    return Emit(out, pkt, nullptr, 0, Ecn::NOT_ECT, m_cfg.rocev2.dscp);
}

bool
RoceResponder::SendCnp(TxDatagram& out)
{
    ParsedPacket pkt;
    pkt.bth.opcode = ROCE_CNP;
    pkt.info = &LookupOpcode(ROCE_CNP);
    pkt.bth.destQp = RemoteQpn();
    pkt.bth.becn = true; // as ConnectX NICs send it
    pkt.bth.psn = 0;
    if (!Emit(out, pkt, nullptr, 0, Ecn::NOT_ECT, m_cfg.rocev2.cnpDscp))
    {
        return false;
    }
    Count(Counter::TX_CNP);
    return true;
}

void
RoceResponder::NakFor(RoceExec result, uint32_t psn)
{
    switch (result)
    {
    case RoceExec::OK:
        return;
    case RoceExec::RNR:
        Count(Counter::RX_RNR);
        QueueNak(Aeth::TYPE_RNR_NAK | (m_cfg.rocev2.minRnrTimer & Aeth::VALUE_MASK), psn);
        return;
    case RoceExec::ACCESS:
        Count(Counter::RX_ACCESS_ERROR);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_REMOTE_ACCESS_ERROR, psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::WR_FLUSH_ERR);
        return;
    case RoceExec::LENGTH:
        Count(Counter::RX_INVALID);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_INVALID_REQUEST, psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::LOC_LEN_ERR);
        return;
    case RoceExec::LOCAL_PROT:
        Count(Counter::RX_ACCESS_ERROR);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_REMOTE_OPERATIONAL_ERROR, psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::LOC_PROT_ERR);
        return;
    case RoceExec::INVALID:
        Count(Counter::RX_INVALID);
        QueueNak(Aeth::TYPE_NAK | Aeth::NAK_INVALID_REQUEST, psn);
        EnterError(WcStatus::WR_FLUSH_ERR, 0, WcStatus::WR_FLUSH_ERR);
        return;
    }
}

bool
RoceResponder::OpcodeFollows(const OpcodeInfo& info) const
{
    const bool first =
        info.position == MessagePosition::FIRST || info.position == MessagePosition::ONLY;
    switch (m_state)
    {
    case RoceResponderState::IDLE:
        return first;
    case RoceResponderState::IN_WRITE:
        return !first && info.write;
    case RoceResponderState::IN_SEND:
        return !first && !info.write;
    case RoceResponderState::ERROR:
        return false;
    }
    return false;
}

RoceExec
RoceResponder::PlaceIntoRecv(size_t k, uint32_t offset, const ParsedPacket& pkt)
{
    const PostedRecv& recv = m_rq[k];
    uint32_t len = pkt.payloadLength;
    if (uint64_t(offset) + len > recv.wr.sge.length)
    {
        return RoceExec::LENGTH;
    }
    if (len == 0)
    {
        return RoceExec::OK;
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
        return RoceExec::LOCAL_PROT;
    }
    if (dst != nullptr)
    {
        std::memcpy(dst, pkt.payload, len);
    }
    Count(Counter::BYTES_PLACED, len);
    return RoceExec::OK;
}

bool
RoceResponder::WriteAllowed(uint32_t rkey, uint64_t va, uint32_t length)
{
    // IB: a zero-length WRITE does not check the R_Key.
    uint8_t* unused = nullptr;
    return length == 0 ||
           m_ep.memory.Check(rkey, va, length, ACCESS_REMOTE_WRITE, &unused) == PostStatus::OK;
}

void
RoceResponder::EndMessage()
{
    m_msn = PsnAdd(m_msn, 1);
    Count(Counter::MESSAGES_RECEIVED);
}

void
RoceResponder::CompleteRecv(WcOpcode opcode, uint32_t byteLen, bool hasImm, uint32_t immData)
{
    Completion c;
    c.wrId = m_rq.front().wr.wrId;
    c.opcode = opcode;
    c.connectionId = Qpn();
    c.byteLen = byteLen;
    c.hasImm = hasImm;
    c.immData = immData;
    m_rq.pop_front();
    m_ep.PushCompletion(c);
}

} // namespace metaroce
