/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-multipath-responder.h"

#include "metaroce-multipath-connection.h"

#include <algorithm>
#include <cstring>

namespace metaroce
{

namespace
{

/// Largest number of queued NAKs (more are dropped; the sender resends and is NAKed again).
constexpr size_t MAX_QUEUED_NAKS = 64;
/// Largest number of remembered rejected messages.
constexpr size_t MAX_REJECTED = 64;

/// Shift a 256-bit bitmap (word 0 = bits 0..63) right by \p n bits.
void
ShiftRight(std::array<uint64_t, 4>& b, uint32_t n)
{
    if (n >= 256)
    {
        b.fill(0);
        return;
    }
    uint32_t words = n / 64;
    uint32_t bits = n % 64;
    for (uint32_t i = 0; i < 4; ++i)
    {
        uint64_t lo = (i + words < 4) ? b[i + words] : 0;
        uint64_t hi = (i + words + 1 < 4) ? b[i + words + 1] : 0;
        b[i] = bits ? (lo >> bits) | (hi << (64 - bits)) : lo;
    }
}

/// \return the number of consecutive set bits from bit 0.
uint32_t
LeadingOnes(const std::array<uint64_t, 4>& b)
{
    uint32_t n = 0;
    for (uint64_t w : b)
    {
        if (w == ~uint64_t(0))
        {
            n += 64;
            continue;
        }
        return n + uint32_t(__builtin_ctzll(~w));
    }
    return n;
}

/// \return the AckDelay of a record sent at \p now for an arrival at \p arrival (8 ns units).
uint16_t
AckDelayUnits(Time now, Time arrival)
{
    int64_t held = (now - arrival) / NanoSeconds(AckRecord::DELAY_UNIT_NS);
    return uint16_t(std::clamp<int64_t>(held, 0, AckRecord::DELAY_MAX));
}

} // namespace

MultipathResponder::MultipathResponder(MultipathConnection& conn)
    : MultipathRole(conn),
      m_timers(0),
      m_coalesced(conn.Config().ackPolicy == "coalesced")
{
}

void
MultipathResponder::CreatePaths()
{
    // Half of the connection ends of a permutation never receive data: no per-path state.
    m_recvPaths.resize(m_cfg.numPaths);
    m_timers.SetPathCount(m_cfg.numPaths);
}

size_t
MultipathResponder::HeapBytes() const
{
    size_t bytes = m_recvPaths.capacity() * sizeof(RecvPath);
    for (const auto& s : m_streams)
    {
        bytes += sizeof(s) + s.recvs.CapacityBytes();
    }
    for (const auto& m : m_recvMessages)
    {
        bytes += sizeof(m) + m.bits.capacity() * sizeof(uint64_t);
    }
    bytes += m_doneAbove.capacity() * sizeof(m_doneAbove[0]) + m_rejected.CapacityBytes() +
             m_naks.CapacityBytes() + m_records.capacity() + m_timers.HeapBytes();
    return bytes;
}

MultipathResponder::Stream&
MultipathResponder::GetStream(uint16_t id)
{
    if (id >= m_streams.size())
    {
        m_streams.resize(size_t(id) + 1);
    }
    return m_streams[id];
}

bool
MultipathResponder::PollTransmit(Time now, TxDatagram& out)
{
    if (m_ackDue)
    {
        return SendCoalescedAck(now, out);
    }
    if (m_ackNow.Any())
    {
        uint8_t pid = uint8_t(m_ackNow.PopFirst());
        return SendAck(now, out, pid);
    }
    if (m_naks.empty())
    {
        return false;
    }
    ParsedPacket pkt;
    pkt.info = &LookupOpcode(MR_NAK);
    pkt.bth.opcode = MR_NAK;
    pkt.bth.destQp = RemoteQpn();
    pkt.mnh = m_naks.front();
    m_naks.pop_front();
    Count(Counter::TX_NAK);
    return EmitDatagram(out, pkt, nullptr, 0, Ecn::NOT_ECT, NakSourcePort());
}

Time
MultipathResponder::NextDeadline() const
{
    // ("coalesced" arms only the connection's ACK timer, "per-path" only the paths' ones.)
    return m_timers.Earliest();
}

void
MultipathResponder::HandleTimeout(Time now)
{
    if (m_timers.Earliest() > now)
    {
        return; // nothing due (the requester's timer fired)
    }
    if (m_timers.Get(ResponderTimer::ACK) <= now)
    {
        m_ackDue = true;
        m_timers.Clear(ResponderTimer::ACK);
    }
    for (uint32_t i = 0; i < m_recvPaths.size(); ++i)
    {
        if (m_timers.Get(i, ResponderPathTimer::ACK) <= now)
        {
            m_ackNow.Insert(i);
            m_timers.Clear(i, ResponderPathTimer::ACK);
        }
    }
}

void
MultipathResponder::FlushStream(uint16_t sid)
{
    if (sid >= m_streams.size())
    {
        return;
    }
    Stream& s = m_streams[sid];
    for (size_t i = 0; i < s.recvs.size(); ++i)
    {
        PostedRecv& r = s.recvs[i];
        if (!r.done)
        {
            r.done = true;
            r.completion.status = WcStatus::WR_FLUSH_ERR;
        }
    }
    DeliverRecvCompletions(s);
}

void
MultipathResponder::ClearAfterError()
{
    m_naks.clear();
    m_ackNow.Clear();
    m_ackPending.Clear();
    m_ackDue = false;
    m_timers.ClearAll();
}

PostStatus
MultipathResponder::PostRecv(const RecvWr& wr)
{
    if (wr.streamId >= m_cfg.maxStreams)
    {
        return PostStatus::INVALID_STREAM;
    }
    Stream& s = GetStream(wr.streamId);
    if (s.recvs.size() >= m_cfg.maxPostedRecvs)
    {
        return PostStatus::QUEUE_FULL;
    }
    PostedRecv r;
    r.wr = wr;
    r.completion.wrId = wr.wrId;
    r.completion.connectionId = Qpn();
    r.completion.streamId = wr.streamId;
    r.completion.opcode = WcOpcode::RECV;
    s.recvs.push_back(r);
    return PostStatus::OK;
}

void
MultipathResponder::HandleProbe(Time now, const DatagramMeta& meta, const ParsedPacket& pkt)
{
    EnsurePaths();
    if (pkt.mdh.pathId >= m_recvPaths.size())
    {
        Count(Counter::RX_INVALID);
        return;
    }
    RecvPath& rp = m_recvPaths[pkt.mdh.pathId];
    // A probe is the sender's explicit request to (re)start the path in its epoch, so it
    // resets the path whichever way the epochs differ: the two ends resynchronise even if
    // the receiver somehow got ahead.
    if (!rp.seen || pkt.mdh.pathEpoch != rp.epoch)
    {
        rp = RecvPath{};
        rp.seen = true;
        rp.epoch = pkt.mdh.pathEpoch;
        m_timers.Clear(pkt.mdh.pathId, ResponderPathTimer::ACK); // (a fresh record's timer)
    }
    Count(Counter::RX_PROBE);
    rp.srcPort = meta.srcPort; // the reply goes back on the probe's (new) source port
    rp.flags |= Mah::FLAG_PROBE_REPLY;
    rp.probePsn = pkt.bth.psn;
    rp.triggerAt = now; // (a coalesced reply's AckDelay counts from the probe)
    ScheduleAck(now, pkt.mdh.pathId, true);
}

void
MultipathResponder::HandleData(Time now, const DatagramMeta& meta, const ParsedPacket& pkt)
{
    EnsurePaths();
    if (pkt.mdh.pathId >= m_recvPaths.size())
    {
        Count(Counter::RX_INVALID);
        return;
    }
    RecvPath& rp = m_recvPaths[pkt.mdh.pathId];
    bool newEpoch = !rp.seen || int8_t(pkt.mdh.pathEpoch - rp.epoch) > 0;
    if (!newEpoch && pkt.mdh.pathEpoch != rp.epoch)
    {
        // The sender retired that epoch and resends its packets elsewhere.
        Count(Counter::RX_STALE_EPOCH);
        return;
    }
    // A new epoch starts a fresh PSN space, but only once a packet of it is accepted: a
    // rejected packet changes no state.
    RecvPath fresh;
    fresh.seen = true;
    fresh.epoch = pkt.mdh.pathEpoch;
    const RecvPath& view = newEpoch ? fresh : rp;
    int32_t d = PsnDiff(pkt.bth.psn, view.cumulativePsn);
    bool hadGap = view.bits[0] | view.bits[1] | view.bits[2] | view.bits[3];
    if (d < 0 || (d > 0 && d <= int32_t(m_cfg.sackWindow) &&
                  ((view.bits[(d - 1) / 64] >> ((d - 1) % 64)) & 1)))
    {
        Count(Counter::RX_DUPLICATE); // dropped, acknowledged at once
        rp.flags |= Mah::FLAG_DUPLICATE;
        ScheduleAck(now, pkt.mdh.pathId, true);
        return;
    }
    if (d > int32_t(m_cfg.sackWindow))
    {
        Count(Counter::RX_OUT_OF_WINDOW);
        return;
    }
    bool duplicate = false;
    if (pkt.bth.opcode != MR_NOP)
    {
        uint8_t syndrome = PlaceData(now, pkt, duplicate);
        if (syndrome != 0)
        {
            // Not acknowledged: a lost NAK is repaired like a lost packet.
            if (syndrome != PLACE_SILENT_DROP)
            {
                QueueNak(pkt, syndrome);
            }
            return;
        }
    }
    if (newEpoch)
    {
        rp = fresh;
        m_timers.Clear(pkt.mdh.pathId, ResponderPathTimer::ACK); // (a fresh record's timer)
    }
    rp.srcPort = meta.srcPort;
    if (duplicate)
    {
        // Data placed before, arriving again under a new PSN (a resend moved to another
        // path): the sender's resend was spurious, as with a duplicate PSN (RFC 8985's DSACK).
        rp.flags |= Mah::FLAG_DUPLICATE;
    }
    if (meta.ecn == Ecn::CE)
    {
        ++rp.ceCount;
        rp.flags |= Mah::FLAG_ECE;
        Count(Counter::ECN_CE_RECEIVED);
    }
    if (d == 0)
    {
        uint32_t run = LeadingOnes(rp.bits);
        rp.cumulativePsn = PsnAdd(rp.cumulativePsn, 1 + run);
        ShiftRight(rp.bits, 1 + run);
    }
    else
    {
        rp.bits[(d - 1) / 64] |= uint64_t(1) << ((d - 1) % 64);
    }
    rp.triggerPsn = pkt.bth.psn;
    rp.arrivalGap = now - rp.triggerAt;
    rp.triggerAt = now;
    ++rp.unacked;
    m_ep.fairShare.NoteDataArrival(now, m_conn);
    bool immediate = d != 0 || hadGap || meta.ecn == Ecn::CE || duplicate;
    if (m_coalesced)
    {
        // One ACK per ackCoalescePackets packets of the connection, and at once when the
        // sender asked (it has nothing more to send for now) or a message is complete.
        immediate = immediate || ++m_unackedPackets >= m_cfg.ackCoalescePackets || pkt.bth.ackReq ||
                    m_messageDone;
        m_messageDone = false;
    }
    else
    {
        immediate = immediate || rp.unacked >= m_cfg.ackEveryPackets;
    }
    ScheduleAck(now, pkt.mdh.pathId, immediate);
}

bool
MultipathResponder::MessageDone(uint16_t streamId, uint32_t messageSeq) const
{
    if (streamId >= m_streams.size())
    {
        return false;
    }
    if (int32_t(messageSeq - m_streams[streamId].doneBelow) < 0)
    {
        return true;
    }
    for (const auto& d : m_doneAbove)
    {
        if (d.first == streamId && d.second == messageSeq)
        {
            return true;
        }
    }
    return false;
}

void
MultipathResponder::MarkMessageDone(Stream& stream, uint16_t streamId, uint32_t messageSeq)
{
    m_messageDone = true;
    if (messageSeq != stream.doneBelow)
    {
        m_doneAbove.emplace_back(streamId, messageSeq);
        return;
    }
    ++stream.doneBelow;
    bool advanced = true;
    while (advanced)
    {
        advanced = false;
        for (size_t i = 0; i < m_doneAbove.size(); ++i)
        {
            if (m_doneAbove[i].first == streamId && m_doneAbove[i].second == stream.doneBelow)
            {
                m_doneAbove[i] = m_doneAbove.back();
                m_doneAbove.pop_back();
                ++stream.doneBelow;
                advanced = true;
                break;
            }
        }
    }
}

void
MultipathResponder::DeliverRecvCompletions(Stream& stream)
{
    while (!stream.recvs.empty() && stream.recvs.front().done)
    {
        m_ep.PushCompletion(stream.recvs.front().completion);
        stream.recvs.pop_front();
        ++stream.recvBase;
    }
}

uint8_t
MultipathResponder::PlaceData(Time now, const ParsedPacket& pkt, bool& duplicate)
{
    const OpcodeInfo& info = *pkt.info;
    if (info.kind == PacketKind::RESPONSE)
    {
        // An answer to one of this end's READs or atomics: the requester places it.
        return m_conn.Requester().PlaceResponse(now, pkt, duplicate);
    }
    uint16_t sid = pkt.mdh.streamId;
    uint32_t seq = pkt.mdh.messageSeq;
    if (sid >= m_cfg.maxStreams)
    {
        Count(Counter::RX_INVALID);
        return Mnh::INVALID_REQUEST;
    }
    for (size_t i = 0; i < m_rejected.size(); ++i)
    {
        const Rejected& r = m_rejected[i];
        if (r.streamId == sid && r.messageSeq == seq)
        {
            return r.syndrome;
        }
    }
    if (MessageDone(sid, seq))
    {
        // (A resent READ or atomic request too: it was answered once and is never executed
        // again; its answer is held until acknowledged.)
        duplicate = true;
        Count(Counter::RX_DUPLICATE);
        return 0;
    }
    if (info.read || info.atomic)
    {
        uint8_t syndrome = AcceptRequest(now, pkt);
        if (syndrome == 0)
        {
            Count(Counter::RX_DATA);
            Count(Counter::MESSAGES_RECEIVED);
            MarkMessageDone(GetStream(sid), sid, seq);
        }
        return syndrome;
    }
    uint32_t length = info.write ? pkt.reth.dmaLength : pkt.rsh.messageLength;
    uint32_t offset = pkt.mdh.offset;
    bool consistent = (offset % m_cfg.mtu) == 0 && length <= m_cfg.maxMessageSize &&
                      (offset < length || (length == 0 && offset == 0)) &&
                      pkt.payloadLength == std::min(m_cfg.mtu, length - offset) &&
                      (!(info.write && info.consumesRecv) || pkt.rsh.messageLength == length);
    if (!consistent)
    {
        Count(Counter::RX_INVALID);
        return Mnh::INVALID_REQUEST;
    }
    uint32_t packetIndex = offset / m_cfg.mtu;
    RecvMessage* rec = nullptr;
    RecvMessage* free = nullptr;
    for (RecvMessage& r : m_recvMessages)
    {
        if (r.inUse && r.streamId == sid && r.messageSeq == seq)
        {
            rec = &r;
            break;
        }
        if (!r.inUse && free == nullptr)
        {
            free = &r;
        }
    }
    if (rec != nullptr)
    {
        if (rec->length != length)
        {
            Count(Counter::RX_INVALID);
            return Mnh::INVALID_REQUEST;
        }
        if ((rec->bits[packetIndex / 64] >> (packetIndex % 64)) & 1)
        {
            duplicate = true;
            Count(Counter::RX_DUPLICATE);
            return 0;
        }
    }
    // Validate the destination before touching memory.
    uint8_t* dst = nullptr;
    Stream* stream = nullptr;
    PostedRecv* recv = nullptr;
    if (info.consumesRecv)
    {
        stream = &GetStream(sid);
        uint32_t index = pkt.rsh.recvSlot - stream->recvBase;
        if (int32_t(index) < 0)
        {
            Count(Counter::RX_INVALID);
            return Mnh::INVALID_REQUEST;
        }
        if (index >= stream->recvs.size())
        {
            Count(Counter::RX_RNR);
            return Mnh::RNR;
        }
        recv = &stream->recvs[index];
        if (recv->done ||
            (rec != nullptr && rec->consumesRecv && rec->recvSlot != pkt.rsh.recvSlot))
        {
            Count(Counter::RX_INVALID);
            return Mnh::INVALID_REQUEST;
        }
        if (!info.write && length > recv->wr.sge.length)
        {
            // IB: the receive completes in error; the requester gets REM_INV_REQ_ERR.
            Count(Counter::RX_INVALID);
            return FailRecv(*stream, *recv, WcStatus::LOC_LEN_ERR, sid, seq, Mnh::INVALID_REQUEST);
        }
        if (!info.write && pkt.payloadLength > 0 &&
            m_ep.memory.Check(recv->wr.sge.lkey,
                              recv->wr.sge.addr + offset,
                              pkt.payloadLength,
                              ACCESS_LOCAL_WRITE,
                              &dst) != PostStatus::OK)
        {
            // IB: the receive buffer was deregistered; the receive completes with a local
            // protection error and the requester gets a remote operational error.
            Count(Counter::RX_ACCESS_ERROR);
            return FailRecv(*stream,
                            *recv,
                            WcStatus::LOC_PROT_ERR,
                            sid,
                            seq,
                            Mnh::REMOTE_OPERATION);
        }
    }
    if (info.write && length > 0)
    {
        // Every packet carries the message's whole DMA range: check all of it, so that no
        // packet of a WRITE that is partly outside the region is placed (IB checks the whole
        // range before writing). A zero-length WRITE checks no key (IB).
        uint8_t* base = nullptr;
        if (pkt.reth.va < offset || m_ep.memory.Check(pkt.reth.rkey,
                                                      pkt.reth.va - offset,
                                                      length,
                                                      ACCESS_REMOTE_WRITE,
                                                      &base) != PostStatus::OK)
        {
            Count(Counter::RX_ACCESS_ERROR);
            return Mnh::REMOTE_ACCESS;
        }
        dst = base ? base + offset : nullptr;
    }
    if (rec == nullptr)
    {
        if (free == nullptr)
        {
            if (m_recvMessages.size() >= m_cfg.maxOutstandingWrs)
            {
                Count(Counter::RX_RESOURCE_DROP);
                return PLACE_SILENT_DROP;
            }
            m_recvMessages.emplace_back();
            free = &m_recvMessages.back();
        }
        rec = free;
        rec->inUse = true;
        rec->streamId = sid;
        rec->messageSeq = seq;
        rec->length = length;
        rec->numPackets = std::max<uint32_t>(1, (length + m_cfg.mtu - 1) / m_cfg.mtu);
        rec->received = 0;
        rec->bits.assign((rec->numPackets + 63) / 64, 0);
        rec->consumesRecv = false;
        rec->hasImm = false;
    }
    if (recv != nullptr)
    {
        rec->consumesRecv = true;
        rec->recvSlot = pkt.rsh.recvSlot;
    }
    if (info.immediate)
    {
        rec->hasImm = true;
        rec->immData = pkt.immDt;
    }
    if (dst != nullptr && pkt.payloadLength > 0)
    {
        std::memcpy(dst, pkt.payload, pkt.payloadLength);
    }
    rec->bits[packetIndex / 64] |= uint64_t(1) << (packetIndex % 64);
    Count(Counter::RX_DATA);
    Count(Counter::BYTES_PLACED, pkt.payloadLength);
    if (++rec->received < rec->numPackets)
    {
        return 0;
    }
    // Message complete. The packet that completes it need not be the one that named its
    // receive and immediate (a WRITE's last packet): those come from the message's record.
    rec->inUse = false;
    Count(Counter::MESSAGES_RECEIVED);
    if (rec->consumesRecv)
    {
        stream = &GetStream(sid);
        uint32_t index = rec->recvSlot - stream->recvBase;
        if (index >= stream->recvs.size() || stream->recvs[index].done)
        {
            // (Another message naming the same receive completed or failed it meanwhile: a
            // forged or corrupt request. The receive has completed once; this message is
            // rejected, so its requester does not report a delivery that nothing surfaced.)
            Count(Counter::RX_INVALID);
            return Reject(sid, seq, Mnh::INVALID_REQUEST);
        }
        recv = &stream->recvs[index];
        recv->done = true;
        recv->completion.status = WcStatus::SUCCESS;
        recv->completion.opcode = info.write ? WcOpcode::RECV_RDMA_WITH_IMM : WcOpcode::RECV;
        recv->completion.byteLen = length;
        recv->completion.hasImm = rec->hasImm;
        recv->completion.immData = rec->immData;
        DeliverRecvCompletions(*stream);
    }
    MarkMessageDone(GetStream(sid), sid, seq);
    return 0;
}

uint8_t
MultipathResponder::AcceptRequest(Time now, const ParsedPacket& pkt)
{
    if (pkt.mdh.offset != 0 || pkt.payloadLength != 0)
    {
        Count(Counter::RX_INVALID);
        return Mnh::INVALID_REQUEST;
    }
    MultipathRequester& answers = m_conn.Requester();
    if (!answers.ResponseRoom())
    {
        Count(Counter::RX_RESOURCE_DROP); // beyond the responder's resources: it comes again
        return PLACE_SILENT_DROP;
    }
    if (pkt.info->read)
    {
        const Reth& reth = pkt.reth;
        if (reth.dmaLength > m_cfg.maxMessageSize)
        {
            Count(Counter::RX_INVALID);
            return Mnh::INVALID_REQUEST;
        }
        // IB: a zero-length READ checks no R_Key. The bytes are read when each answer packet
        // leaves (as an IB responder does), so a region deregistered meanwhile is not read.
        uint8_t* unused = nullptr;
        if (reth.dmaLength > 0 &&
            m_ep.memory.Check(reth.rkey, reth.va, reth.dmaLength, ACCESS_REMOTE_READ, &unused) !=
                PostStatus::OK)
        {
            Count(Counter::RX_ACCESS_ERROR);
            return Mnh::REMOTE_ACCESS;
        }
        answers.QueueResponse(now, pkt, 0);
        return 0;
    }
    const AtomicEth& a = pkt.atomicEth;
    if (a.va % ATOMIC_OPERAND_SIZE != 0)
    {
        Count(Counter::RX_INVALID);
        return Mnh::INVALID_REQUEST; // IB: a misaligned atomic is an invalid request
    }
    uint8_t* word = nullptr;
    if (m_ep.memory.Check(a.rkey, a.va, ATOMIC_OPERAND_SIZE, ACCESS_REMOTE_ATOMIC, &word) !=
        PostStatus::OK)
    {
        Count(Counter::RX_ACCESS_ERROR);
        return Mnh::REMOTE_ACCESS;
    }
    uint64_t original = ApplyAtomic(word, pkt.bth.opcode == MR_CMP_SWAP, a.compare, a.swapAdd);
    answers.QueueResponse(now, pkt, original);
    return 0;
}

void
MultipathResponder::QueueRequestNak(uint16_t sid, uint32_t seq, uint8_t syndrome)
{
    if (m_naks.size() >= MAX_QUEUED_NAKS)
    {
        return;
    }
    Mnh nak;
    nak.streamId = sid;
    nak.syndrome = syndrome;
    nak.messageSeq = seq;
    m_naks.push_back(nak);
}

uint8_t
MultipathResponder::FailRecv(Stream& stream,
                             PostedRecv& recv,
                             WcStatus status,
                             uint16_t sid,
                             uint32_t seq,
                             uint8_t syndrome)
{
    recv.done = true;
    recv.completion.status = status;
    DeliverRecvCompletions(stream);
    return Reject(sid, seq, syndrome);
}

uint8_t
MultipathResponder::Reject(uint16_t sid, uint32_t seq, uint8_t syndrome)
{
    if (m_rejected.size() >= MAX_REJECTED)
    {
        m_rejected.pop_front();
    }
    m_rejected.push_back(Rejected{sid, seq, syndrome}); // later packets get the same answer
    return syndrome;
}

void
MultipathResponder::QueueNak(const ParsedPacket& pkt, uint8_t syndrome)
{
    if (m_naks.size() >= MAX_QUEUED_NAKS)
    {
        return;
    }
    Mnh nak;
    nak.streamId = pkt.mdh.streamId;
    nak.syndrome = syndrome;
    nak.pathId = pkt.mdh.pathId;
    nak.messageSeq = pkt.mdh.messageSeq;
    nak.offset = pkt.mdh.offset;
    nak.pathEpoch = pkt.mdh.pathEpoch;
    nak.psn = pkt.bth.psn;
    m_naks.push_back(nak);
}

void
MultipathResponder::ScheduleAck(Time now, uint8_t pathId, bool immediate)
{
    if (m_coalesced)
    {
        m_ackPending.Insert(pathId);
        if (immediate || m_cfg.ackDelay == 0)
        {
            m_ackDue = true;
            m_timers.Clear(ResponderTimer::ACK);
        }
        else if (!m_timers.Armed(ResponderTimer::ACK))
        {
            m_timers.Set(ResponderTimer::ACK, now + m_cfg.ackDelay);
        }
        return;
    }
    if (immediate || m_cfg.ackDelay == 0)
    {
        m_ackNow.Insert(pathId);
        m_timers.Clear(pathId, ResponderPathTimer::ACK);
    }
    else if (!m_timers.Armed(pathId, ResponderPathTimer::ACK))
    {
        m_timers.Set(pathId, ResponderPathTimer::ACK, now + m_cfg.ackDelay);
    }
}

Mah
MultipathResponder::ReceiveState(uint8_t pathId) const
{
    const RecvPath& rp = m_recvPaths[pathId];
    Mah mah;
    mah.pathId = pathId;
    mah.pathEpoch = rp.epoch;
    mah.cumulativePsn = rp.cumulativePsn;
    mah.triggerPsn = rp.triggerPsn;
    mah.sack = rp.bits;
    return mah;
}

Mah
MultipathResponder::TakeAckState(uint8_t pathId)
{
    RecvPath& rp = m_recvPaths[pathId];
    Mah mah = ReceiveState(pathId);
    mah.flags = rp.flags;
    if ((rp.flags & Mah::FLAG_PROBE_REPLY) && rp.probePsn != 0)
    {
        mah.triggerPsn = rp.probePsn; // (a confirmation probe's reply names the probe)
    }
    mah.ceCount = uint8_t(std::min<uint32_t>(rp.ceCount, 255));
    rp.reportedFlags = uint8_t(rp.flags & Mah::FLAG_ECE);
    rp.reportedCe = mah.ceCount;
    rp.unacked = 0;
    rp.ceCount = 0;
    rp.flags = 0;
    m_timers.Clear(pathId, ResponderPathTimer::ACK);
    return mah;
}

bool
MultipathResponder::SendAck(Time now, TxDatagram& out, uint8_t pathId)
{
    ParsedPacket pkt;
    pkt.info = &LookupOpcode(MR_ACK);
    pkt.bth.opcode = MR_ACK;
    pkt.bth.destQp = RemoteQpn();
    pkt.mah = TakeAckState(pathId);
    pkt.mah.rateHint = m_ep.fairShare.HintMbps(now);
    Count(Counter::TX_ACK);
    return EmitDatagram(out, pkt, nullptr, 0, Ecn::NOT_ECT, m_recvPaths[pathId].srcPort);
}

bool
MultipathResponder::SendCoalescedAck(Time now, TxDatagram& out)
{
    // As many records as fit in one MTU of payload (and in RecordCount); the rest go in the
    // next ACK, which stays due.
    const size_t cap = std::min<size_t>(m_cfg.mtu, 255 * (AckRecord::SIZE + Mah::SACK_BYTES));
    m_records.resize(cap);
    size_t len = 0;
    uint32_t count = 0;
    uint8_t paths[255];
    while (m_ackPending.Any() && count < 255)
    {
        uint32_t pid = m_ackPending.First();
        const RecvPath& rp = m_recvPaths[pid];
        bool sack = (rp.bits[0] | rp.bits[1] | rp.bits[2] | rp.bits[3]) != 0;
        if (len + AckRecord::SIZE + (sack ? Mah::SACK_BYTES : 0) > cap)
        {
            break;
        }
        m_ackPending.PopFirst();
        const uint16_t delay = AckDelayUnits(now, rp.triggerAt);
        len += AckRecord::Write(m_records.data() + len, TakeAckState(uint8_t(pid)), delay);
        paths[count++] = uint8_t(pid);
    }
    m_ackDue = m_ackPending.Any();
    if (!m_ackDue)
    {
        m_unackedPackets = 0;
        m_timers.Clear(ResponderTimer::ACK);
    }
    if (count == 0)
    {
        return false; // (nothing pending: ScheduleAck is the only way in, so this is a guard)
    }
    // The ACK goes back as one of its paths' own ACK would (that path's source port; on a
    // multiplane NIC, that path's plane), rotating over them so that ACKs spread like data.
    const uint8_t ackPath = paths[m_acksSent++ % count];
    uint32_t records = count;
    if (m_cfg.ackRepeat > 0)
    {
        PathSet fresh;
        for (uint32_t i = 0; i < count; ++i)
        {
            fresh.Insert(paths[i]);
        }
        AppendRepeatedRecords(now, fresh, cap, len, records);
    }
    ParsedPacket pkt;
    pkt.info = &LookupOpcode(MR_ACK_COALESCED);
    pkt.bth.opcode = MR_ACK_COALESCED;
    pkt.bth.destQp = RemoteQpn();
    pkt.mch.rateHint = m_ep.fairShare.HintMbps(now);
    pkt.mch.recordCount = uint8_t(records);
    Count(Counter::TX_ACK);
    if (!EmitDatagram(out,
                      pkt,
                      m_records.data(),
                      uint32_t(len),
                      Ecn::NOT_ECT,
                      m_recvPaths[ackPath].srcPort))
    {
        return false;
    }
    out.pathId = ackPath;
    return true;
}

void
MultipathResponder::AppendRepeatedRecords(Time now,
                                          const PathSet& fresh,
                                          size_t cap,
                                          size_t& len,
                                          uint32_t& count)
{
    PathSet repeat = m_ackRepeat;
    m_ackRepeat.Clear();
    while (repeat.Any())
    {
        uint32_t pid = repeat.PopFirst();
        RecvPath& rp = m_recvPaths[pid];
        if (fresh.Contains(pid))
        {
            continue; // (reported anew: its count restarts below)
        }
        Mah mah = ReceiveState(uint8_t(pid));
        // The marks the record reported, once more (the sender counts them once); a
        // duplicate report is not repeated.
        mah.flags = uint8_t(Mah::FLAG_REPEAT | rp.reportedFlags);
        mah.ceCount = rp.reportedCe;
        if (count >= 255 || len + AckRecord::Length(mah) > cap)
        {
            m_ackRepeat.Insert(pid); // (no room: the next ACK repeats it)
            continue;
        }
        const uint16_t delay = AckDelayUnits(now, rp.triggerAt);
        len += AckRecord::Write(m_records.data() + len, mah, delay);
        ++count;
        if (--rp.repeatsLeft > 0)
        {
            m_ackRepeat.Insert(pid);
        }
    }
    // Only a sparse path's record is repeated: a path whose packets come closer together
    // than ackRepeatGap brings its state back with its own next ACK, long before a timer.
    PathSet reported = fresh;
    while (reported.Any())
    {
        uint32_t pid = reported.PopFirst();
        RecvPath& rp = m_recvPaths[pid];
        rp.repeatsLeft = rp.arrivalGap >= m_cfg.ackRepeatGap ? m_cfg.ackRepeat : 0;
        if (rp.repeatsLeft > 0)
        {
            m_ackRepeat.Insert(pid);
        }
    }
}

} // namespace metaroce
