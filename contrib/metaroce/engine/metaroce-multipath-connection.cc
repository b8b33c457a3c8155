/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-multipath-connection.h"

#include <algorithm>
#include <cstring>

namespace metaroce
{

namespace
{

/// First UDP source port handed out (the dynamic range, RFC 6335).
constexpr uint16_t EPHEMERAL_PORT_BASE = 49152;
/// Largest number of queued NAKs (more are dropped; the sender resends and is NAKed again).
constexpr size_t MAX_QUEUED_NAKS = 64;
/// Largest number of remembered rejected messages.
constexpr size_t MAX_REJECTED = 64;
/// PlaceData result: drop silently (no ACK, no NAK); the sender will resend.
constexpr uint8_t SILENT_DROP = 0xFF;

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

/// \return true if \p op consumes a posted receive at the responder.
bool
ConsumesRecv(WrOpcode op)
{
    return op != WrOpcode::RDMA_WRITE;
}

/// \return the MetaRoCE opcode carrying \p op.
uint8_t
OpcodeFor(WrOpcode op)
{
    switch (op)
    {
    case WrOpcode::RDMA_WRITE:
        return MR_WRITE;
    case WrOpcode::RDMA_WRITE_WITH_IMM:
        return MR_WRITE_IMM;
    case WrOpcode::SEND:
        return MR_SEND;
    case WrOpcode::SEND_WITH_IMM:
        return MR_SEND_IMM;
    }
    return MR_WRITE;
}

/// \return the completion status a NAK syndrome maps to.
WcStatus
StatusFor(uint8_t syndrome)
{
    switch (syndrome)
    {
    case Mnh::REMOTE_ACCESS:
        return WcStatus::REM_ACCESS_ERR;
    case Mnh::INVALID_REQUEST:
        return WcStatus::REM_INV_REQ_ERR;
    case Mnh::REMOTE_OPERATION:
        return WcStatus::REM_OP_ERR;
    default:
        return WcStatus::GENERAL_ERR;
    }
}

} // namespace

MultipathConnection::MultipathConnection(EndpointShared& ep,
                                         uint32_t qpn,
                                         const ConnectionConfig& cfg)
    : TransportConnection(ep, qpn, cfg),
      m_cc(CreateCongestionControl(cfg.congestionControl)),
      m_scheduler(CreatePathScheduler(cfg.pathScheduler)),
      m_loss(CreateLossDetection(cfg.lossDetection)),
      m_paths(cfg.numPaths),
      m_recvPaths(cfg.numPaths),
      m_pacingRate(cfg.lineRateBps)
{
    uint16_t base = cfg.sourcePortBase;
    if (base == 0 || uint32_t(base) + cfg.numPaths > 65536)
    {
        base = uint16_t(EPHEMERAL_PORT_BASE + m_ep.rng.Below(16384 - cfg.numPaths));
    }
    for (uint32_t i = 0; i < cfg.numPaths; ++i)
    {
        PathState& p = m_paths[i];
        p.id = uint8_t(i);
        p.sourcePort = uint16_t(base + i);
        p.cwnd = cfg.initialPathWindow;
        p.rto = cfg.rtoInitial;
        p.sackWindow = cfg.sackWindow;
    }
}

size_t
MultipathConnection::PathCount() const
{
    return m_paths.size();
}

const PathState*
MultipathConnection::Path(size_t i) const
{
    return i < m_paths.size() ? &m_paths[i] : nullptr;
}

size_t
MultipathConnection::StateBytes() const
{
    size_t bytes = sizeof(*this);
    for (const auto& p : m_paths)
    {
        bytes += sizeof(p) + p.ring.capacity() * sizeof(InflightEntry) +
                 p.lostPsns.capacity() * sizeof(uint32_t);
    }
    bytes += m_recvPaths.capacity() * sizeof(RecvPath);
    for (const auto& s : m_streams)
    {
        bytes += sizeof(s) + s.recvs.CapacityBytes();
    }
    for (const auto& m : m_messages)
    {
        bytes += sizeof(m) + m.acked.capacity() * sizeof(uint64_t);
    }
    for (const auto& m : m_recvMessages)
    {
        bytes += sizeof(m) + m.bits.capacity() * sizeof(uint64_t);
    }
    bytes += m_freeSlots.capacity() * sizeof(uint32_t) +
             m_doneAbove.capacity() * sizeof(m_doneAbove[0]) + m_resends.CapacityBytes() +
             m_sendStreams.CapacityBytes() + m_rejected.CapacityBytes() + m_naks.CapacityBytes();
    return bytes;
}

MultipathConnection::Stream&
MultipathConnection::GetStream(uint16_t id)
{
    if (id >= m_streams.size())
    {
        m_streams.resize(size_t(id) + 1);
    }
    return m_streams[id];
}

// ---------------------------------------------------------------------------------------------
// Requester
// ---------------------------------------------------------------------------------------------

uint32_t
MultipathConnection::AllocateSlot()
{
    if (!m_freeSlots.empty())
    {
        uint32_t slot = m_freeSlots.back();
        m_freeSlots.pop_back();
        return slot;
    }
    m_messages.emplace_back();
    return uint32_t(m_messages.size() - 1);
}

PostStatus
MultipathConnection::PostSend(Time now, const SendWr& wr, const uint8_t* /*localPtr*/)
{
    // The source is looked up again for every packet sent (TransmitPacket), so that a region
    // deregistered after the post is never read.
    m_now = now;
    if (wr.streamId >= m_cfg.maxStreams)
    {
        return PostStatus::INVALID_STREAM;
    }
    if (wr.sge.length > m_cfg.maxMessageSize)
    {
        return PostStatus::TOO_LONG;
    }
    if (m_outstanding >= m_cfg.maxOutstandingWrs)
    {
        return PostStatus::QUEUE_FULL;
    }
    uint32_t slot = AllocateSlot();
    SendMessage& m = m_messages[slot];
    Stream& s = GetStream(wr.streamId);
    m.wr = wr;
    m.messageSeq = s.nextMessageSeq++;
    m.recvSlot = ConsumesRecv(wr.opcode) ? s.nextRecvSlot++ : 0;
    m.numPackets = std::max<uint32_t>(1, (wr.sge.length + m_cfg.mtu - 1) / m_cfg.mtu);
    m.nextPacket = 0;
    m.packetsAcked = 0;
    m.acked.assign((m.numPackets + 63) / 64, 0);
    m.nextInStream = NONE;
    m.rnrRetries = 0;
    m.status = WcStatus::SUCCESS;
    m.finished = false;
    m.inUse = true;
    if (s.tail != NONE)
    {
        m_messages[s.tail].nextInStream = slot;
    }
    else
    {
        s.head = slot;
    }
    s.tail = slot;
    if (s.sendCursor == NONE)
    {
        s.sendCursor = slot;
    }
    if (!s.inSendRing)
    {
        s.inSendRing = true;
        m_sendStreams.push_back(wr.streamId);
    }
    if (m_outstanding == 0)
    {
        m_progressTime = now;
    }
    ++m_outstanding;
    return PostStatus::OK;
}

bool
MultipathConnection::HasNewData() const
{
    return !m_sendStreams.empty();
}

bool
MultipathConnection::NextNewPacket(uint32_t& slot, uint32_t& packetIndex)
{
    while (!m_sendStreams.empty())
    {
        uint16_t sid = m_sendStreams.front();
        m_sendStreams.pop_front();
        Stream& s = m_streams[sid];
        while (s.sendCursor != NONE &&
               m_messages[s.sendCursor].nextPacket >= m_messages[s.sendCursor].numPackets)
        {
            s.sendCursor = m_messages[s.sendCursor].nextInStream;
        }
        if (s.sendCursor == NONE || RnrHeld(s.sendCursor))
        {
            s.inSendRing = false; // ReleaseRnr puts a held stream back
            continue;
        }
        SendMessage& m = m_messages[s.sendCursor];
        slot = s.sendCursor;
        packetIndex = m.nextPacket++;
        if (m.nextPacket >= m.numPackets)
        {
            s.sendCursor = m.nextInStream;
        }
        if (s.sendCursor != NONE)
        {
            m_sendStreams.push_back(sid); // round robin: streams never block each other
        }
        else
        {
            s.inSendRing = false;
        }
        return true;
    }
    return false;
}

bool
MultipathConnection::PacketWanted(uint32_t slot, uint32_t generation, uint32_t packetIndex) const
{
    if (slot == NONE || slot >= m_messages.size())
    {
        return false;
    }
    const SendMessage& m = m_messages[slot];
    return m.inUse && m.generation == generation && !m.finished &&
           !((m.acked[packetIndex / 64] >> (packetIndex % 64)) & 1);
}

uint32_t
MultipathConnection::TotalInflight() const
{
    uint32_t n = 0;
    for (const auto& p : m_paths)
    {
        n += p.inflight;
    }
    return n;
}

bool
MultipathConnection::ConnectionWindowOpen() const
{
    return TotalInflight() < uint32_t(m_cfg.connectionWindow);
}

int
MultipathConnection::PathWithPendingLoss() const
{
    for (size_t i = 0; i < m_paths.size(); ++i)
    {
        const PathState& p = m_paths[i];
        if (!p.lostPsns.empty() && p.Usable() && p.inflight < uint32_t(p.cwnd))
        {
            return int(i);
        }
    }
    return -1;
}

bool
MultipathConnection::HasResendReady() const
{
    return !m_resends.empty();
}

bool
MultipathConnection::WantsToSend(Time now) const
{
    if (m_error)
    {
        return false;
    }
    if (m_ackNow || m_probeNow || !m_naks.empty())
    {
        return true;
    }
    if (m_pacingRate > 0 && now < m_nextSendTime)
    {
        return false;
    }
    if (PathWithPendingLoss() >= 0)
    {
        return true;
    }
    if (!HasResendReady() && !HasNewData())
    {
        return false;
    }
    if (!ConnectionWindowOpen())
    {
        return false;
    }
    for (const auto& p : m_paths)
    {
        if (p.HasRoom())
        {
            return true;
        }
    }
    return false;
}

bool
MultipathConnection::PollTransmit(Time now, TxDatagram& out)
{
    m_now = now;
    if (m_error)
    {
        return false;
    }
    if (m_ackNow)
    {
        uint8_t pid = uint8_t(__builtin_ctzll(m_ackNow));
        m_ackNow &= m_ackNow - 1;
        return SendAck(now, out, pid);
    }
    if (!m_naks.empty())
    {
        ParsedPacket pkt;
        pkt.info = &LookupOpcode(MR_NAK);
        pkt.bth.opcode = MR_NAK;
        pkt.bth.destQp = m_remoteQpn;
        pkt.mnh = m_naks.front();
        m_naks.pop_front();
        Count(Counter::TX_NAK);
        return EmitDatagram(out, pkt, nullptr, 0, Ecn::NOT_ECT, m_paths[0].sourcePort);
    }
    if (m_probeNow)
    {
        uint8_t pid = uint8_t(__builtin_ctzll(m_probeNow));
        m_probeNow &= m_probeNow - 1;
        return SendProbe(now, out, m_paths[pid]);
    }
    if (m_pacingRate > 0 && now < m_nextSendTime)
    {
        return false;
    }
    bool sent = SendData(now, out);
    if (sent && m_pacingRate > 0)
    {
        m_nextSendTime =
            std::max(now, m_nextSendTime) + TransmissionTime(out.length + WIRE_OVERHEAD_BYTES,
                                                             m_pacingRate);
    }
    return sent;
}

bool
MultipathConnection::SendData(Time now, TxDatagram& out)
{
    // 1. Exactly the PSNs a SACK gap revealed, at once, on the path that lost them.
    for (PathState& path : m_paths)
    {
        if (path.lostPsns.empty() || !path.Usable() || path.inflight >= uint32_t(path.cwnd))
        {
            continue;
        }
        for (size_t k = 0; k < path.lostPsns.size(); ++k)
        {
            uint32_t psn = path.lostPsns[k];
            InflightEntry& e = path.Entry(psn);
            if (e.state != InflightEntry::LOST)
            {
                path.lostPsns.erase(path.lostPsns.begin() + k);
                --k;
                continue;
            }
            path.lostPsns.erase(path.lostPsns.begin() + k);
            // An unwanted packet (acknowledged meanwhile, or parked by an RNR NAK) fills its
            // PSN with a NOP, so the receiver's cumulative PSN does not wait for it.
            uint32_t slot =
                PacketWanted(e.messageSlot, e.generation, e.packetIndex) ? e.messageSlot : NONE;
            uint32_t retries = slot == NONE ? 0 : e.retries + 1u;
            if (retries > m_cfg.retryLimit)
            {
                EnterError(now, slot, WcStatus::RETRY_EXC_ERR);
                return false;
            }
            return TransmitPacket(now, out, path, psn, slot, e.packetIndex, true, retries);
        }
    }
    if (!ConnectionWindowOpen())
    {
        return false;
    }
    // 2. Packets taken off a timed-out path, on any path with room.
    while (HasResendReady())
    {
        Resend r = m_resends.front();
        if (!PacketWanted(r.slot, r.generation, r.packetIndex))
        {
            m_resends.pop_front();
            continue;
        }
        if (RnrHeld(r.slot) && !r.rnr)
        {
            m_resends.pop_front();
            m_rnrParked.push_back(r); // would only be NAKed again: wait with the others
            continue;
        }
        uint32_t retries = r.retries + (r.rnr ? 0u : 1u);
        if (retries > m_cfg.retryLimit)
        {
            EnterError(now, r.slot, WcStatus::RETRY_EXC_ERR);
            return false;
        }
        int pid = m_scheduler->Select(m_paths, now);
        if (pid < 0)
        {
            return false;
        }
        m_resends.pop_front();
        PathState& path = m_paths[pid];
        return TransmitPacket(now, out, path, path.nextPsn, r.slot, r.packetIndex, true, retries);
    }
    // 3. New data, sprayed.
    if (!HasNewData())
    {
        return false;
    }
    int pid = m_scheduler->Select(m_paths, now);
    uint32_t slot;
    uint32_t packetIndex;
    if (pid < 0 || !NextNewPacket(slot, packetIndex))
    {
        return false;
    }
    PathState& path = m_paths[pid];
    return TransmitPacket(now, out, path, path.nextPsn, slot, packetIndex, false, 0);
}

bool
MultipathConnection::TransmitPacket(Time now,
                                    TxDatagram& out,
                                    PathState& path,
                                    uint32_t psn,
                                    uint32_t slot,
                                    uint32_t packetIndex,
                                    bool retransmission,
                                    uint32_t retries)
{
    ParsedPacket pkt;
    pkt.bth.destQp = m_remoteQpn;
    pkt.bth.ackReq = true;
    pkt.bth.psn = psn;
    pkt.mdh.pathId = path.id;
    pkt.mdh.pathEpoch = path.epoch;
    const uint8_t* payload = nullptr;
    uint32_t payloadLength = 0;
    uint32_t generation = 0;
    if (slot == NONE)
    {
        pkt.bth.opcode = MR_NOP;
    }
    else
    {
        const SendMessage& m = m_messages[slot];
        generation = m.generation;
        uint32_t offset = packetIndex * m_cfg.mtu;
        payloadLength = std::min(m_cfg.mtu, m.wr.sge.length - offset);
        if (payloadLength > 0)
        {
            // IB: the source must still be registered when the NIC reads it.
            uint8_t* src = nullptr;
            if (m_ep.memory.Check(m.wr.sge.lkey, m.wr.sge.addr + offset, payloadLength, 0, &src) !=
                PostStatus::OK)
            {
                EnterError(now, slot, WcStatus::LOC_PROT_ERR);
                return false;
            }
            payload = src;
        }
        pkt.bth.opcode = OpcodeFor(m.wr.opcode);
        pkt.bth.solicited = (m.wr.opcode == WrOpcode::SEND || m.wr.opcode ==
                             WrOpcode::SEND_WITH_IMM);
        pkt.mdh.streamId = m.wr.streamId;
        pkt.mdh.messageSeq = m.messageSeq;
        pkt.mdh.offset = offset;
        pkt.reth.va = m.wr.remoteAddr + offset;
        pkt.reth.rkey = m.wr.rkey;
        pkt.reth.dmaLength = m.wr.sge.length;
        pkt.rsh.recvSlot = m.recvSlot;
        pkt.rsh.messageLength = m.wr.sge.length;
        pkt.immDt = m.wr.immData;
    }
    pkt.info = &LookupOpcode(pkt.bth.opcode);
    if (!EmitDatagram(out, pkt, payload, payloadLength, Ecn::ECT0, path.sourcePort))
    {
        return false;
    }
    bool newPsn = (psn == path.nextPsn);
    if (newPsn)
    {
        size_t span = size_t(PsnDiff(path.nextPsn, path.ackedPsn)) + 1;
        if (path.ring.size() < span)
        {
            size_t size = std::max<size_t>(8, path.ring.size());
            while (size < span)
            {
                size *= 2;
            }
            std::vector<InflightEntry> ring(size);
            for (uint32_t p = path.ackedPsn; p != path.nextPsn; p = PsnAdd(p, 1))
            {
                ring[p & (size - 1)] = path.Entry(p);
            }
            path.ring.swap(ring);
        }
        path.nextPsn = PsnAdd(path.nextPsn, 1);
    }
    InflightEntry& e = path.Entry(psn);
    e.messageSlot = slot;
    e.generation = generation;
    e.packetIndex = packetIndex;
    e.sendOrder = path.sendCounter++;
    e.sentTime = now;
    e.state = InflightEntry::INFLIGHT;
    e.retransmitted = retransmission;
    e.retries = uint8_t(std::min<uint32_t>(retries, 255));
    ++path.inflight;
    ++path.packetsSent;
    if (retransmission)
    {
        ++path.retransmissions;
        Count(Counter::TX_RETRANSMIT);
    }
    else
    {
        Count(Counter::TX_DATA);
    }
    if (path.rtoDeadline == TIME_INFINITE)
    {
        ArmRto(path, now);
    }
    return true;
}

bool
MultipathConnection::SendProbe(Time now, TxDatagram& out, PathState& path)
{
    path.probeSentTime = now;
    ++path.probesInEpoch;
    ParsedPacket pkt;
    pkt.info = &LookupOpcode(MR_PROBE);
    pkt.bth.opcode = MR_PROBE;
    pkt.bth.destQp = m_remoteQpn;
    pkt.bth.ackReq = true;
    pkt.mdh.pathId = path.id;
    pkt.mdh.pathEpoch = path.epoch;
    Count(Counter::TX_PROBE);
    return EmitDatagram(out, pkt, nullptr, 0, Ecn::ECT0, path.sourcePort);
}

void
MultipathConnection::ArmRto(PathState& path, Time now)
{
    path.rtoDeadline = now + path.rto;
}

void
MultipathConnection::UpdateRtt(PathState& path, Time sample)
{
    path.latestRtt = sample;
    if (!path.hasRtt)
    {
        path.hasRtt = true;
        path.srtt = sample;
        path.rttVar = sample / 2;
        path.minRtt = sample;
    }
    else
    {
        Time err = path.srtt > sample ? path.srtt - sample : sample - path.srtt;
        path.rttVar = (3 * path.rttVar + err) / 4;
        path.srtt = (7 * path.srtt + sample) / 8;
        path.minRtt = std::min(path.minRtt, sample);
    }
    path.rto = std::clamp(path.srtt + 4 * path.rttVar, m_cfg.rtoMin, m_cfg.rtoMax);
}

void
MultipathConnection::RetireEpoch(PathState& path)
{
    // A path that timed out again before any data left in its new epoch (only a probe) keeps
    // the record of the epoch that carried data.
    if (path.nextPsn == path.ackedPsn)
    {
        return;
    }
    path.hasRetired = true;
    path.retiredEpoch = path.epoch;
    path.retiredAckedPsn = path.ackedPsn;
    path.retiredNextPsn = path.nextPsn;
    path.retiredRing.swap(path.ring);
    path.ring.assign(path.retiredRing.size(), InflightEntry{});
}

void
MultipathConnection::HandleRetiredAck(Time now, PathState& path, const Mah& ack)
{
    // A late ACK of the epoch the last RTO retired. Its packets did arrive: credit them, so
    // their resends are skipped, and take the RTT sample it carries (with a round trip above
    // the RTO, the only sample the path can get).
    uint32_t newlyAcked = 0;
    Time rttSample = -1;
    const uint32_t mask = uint32_t(path.retiredRing.size() - 1);
    auto visit = [&](uint32_t psn) {
        if (PsnDiff(psn, path.retiredAckedPsn) < 0 || PsnDiff(psn, path.retiredNextPsn) >= 0)
        {
            return;
        }
        InflightEntry& e = path.retiredRing[psn & mask];
        if (e.state != InflightEntry::INFLIGHT && e.state != InflightEntry::LOST)
        {
            return;
        }
        e.state = InflightEntry::ACKED;
        if (psn == ack.triggerPsn && !e.retransmitted)
        {
            rttSample = now - e.sentTime;
        }
        if (PacketWanted(e.messageSlot, e.generation, e.packetIndex))
        {
            ++newlyAcked;
            CreditPacket(e.messageSlot, e.generation, e.packetIndex);
        }
    };
    for (uint32_t psn = path.retiredAckedPsn;
         PsnDiff(psn, ack.cumulativePsn) < 0 && PsnDiff(psn, path.retiredNextPsn) < 0;
         psn = PsnAdd(psn, 1))
    {
        visit(psn);
    }
    for (uint32_t w = 0; w < 4; ++w)
    {
        for (uint64_t bits = ack.sack[w]; bits != 0; bits &= bits - 1)
        {
            visit(PsnAdd(ack.cumulativePsn, 1 + w * 64 + uint32_t(__builtin_ctzll(bits))));
        }
    }
    if (rttSample >= 0)
    {
        UpdateRtt(path, rttSample);
        NotifyPath(now, PathEvent::RTT, path);
    }
    if (newlyAcked > 0)
    {
        m_progressTime = now;
    }
}

void
MultipathConnection::AckEntry(PathState& path,
                              uint32_t psn,
                              Time now,
                              uint32_t triggerPsn,
                              uint32_t& newlyAcked,
                              Time& rttSample)
{
    InflightEntry& e = path.Entry(psn);
    if (e.state != InflightEntry::INFLIGHT && e.state != InflightEntry::LOST)
    {
        return;
    }
    if (e.state == InflightEntry::INFLIGHT)
    {
        --path.inflight;
    }
    e.state = InflightEntry::ACKED;
    ++newlyAcked;
    ++path.packetsAcked;
    if (!path.anyAcked || int32_t(e.sendOrder - path.highestAckedOrder) > 0)
    {
        path.highestAckedOrder = e.sendOrder;
        path.anyAcked = true;
    }
    if (psn == triggerPsn && !e.retransmitted)
    {
        rttSample = now - e.sentTime;
    }
    CreditPacket(e.messageSlot, e.generation, e.packetIndex);
}

void
MultipathConnection::HandleAck(Time now, const Mah& ack)
{
    if (ack.pathId >= m_paths.size())
    {
        Count(Counter::RX_INVALID);
        return;
    }
    Count(Counter::RX_ACK);
    PathState& path = m_paths[ack.pathId];
    double rate = m_cfg.lineRateBps;
    if (ack.rateHint != Mah::NO_RATE_HINT)
    {
        double hinted = double(ack.rateHint) * 1e6;
        rate = rate > 0 ? std::min(rate, hinted) : hinted;
    }
    if (rate != m_pacingRate)
    {
        if (rate > 0 && (m_pacingRate == 0 || rate < m_pacingRate))
        {
            Count(Counter::WINDOW_DECREASE);
        }
        m_pacingRate = rate;
        if (m_ep.observer)
        {
            m_ep.observer->OnRateChange(now, m_qpn, rate);
        }
    }
    if (ack.pathEpoch != path.epoch)
    {
        if (path.hasRetired && ack.pathEpoch == path.retiredEpoch &&
            !(ack.flags & Mah::FLAG_PROBE_REPLY))
        {
            HandleRetiredAck(now, path, ack);
        }
        Count(Counter::RX_STALE_EPOCH);
        return;
    }
    if (PsnDiff(ack.cumulativePsn, path.nextPsn) > 0)
    {
        Count(Counter::RX_INVALID); // acknowledges PSNs never sent
        return;
    }
    path.lastAck = now;
    path.consecutiveRtos = 0;
    if (path.status != PathStatus::ACTIVE)
    {
        // A probe reply (or any ACK of the new epoch): the path works again. The RTO keeps
        // its back-off until an RTT sample is taken (RFC 6298, 5.7): a round trip above the
        // RTO must not time out again at once.
        bool failed = path.status == PathStatus::FAILED;
        path.status = PathStatus::ACTIVE;
        path.cwnd = std::max(path.cwnd, m_cfg.initialPathWindow);
        path.probeDeadline = TIME_INFINITE;
        path.rtoDeadline = TIME_INFINITE;
        if (failed)
        {
            Count(Counter::PATH_RECOVERED);
        }
        NotifyPath(now, PathEvent::RECOVERED, path);
    }
    if (ack.flags & Mah::FLAG_PROBE_REPLY)
    {
        // One probe in this epoch: its reply is an unambiguous RTT sample (Karn). A reply is
        // not progress: it says the path works, not that data gets through.
        if (path.probesInEpoch == 1 && path.probeSentTime >= 0)
        {
            UpdateRtt(path, now - path.probeSentTime);
            NotifyPath(now, PathEvent::RTT, path);
        }
        return;
    }
    uint32_t newlyAcked = 0;
    Time rttSample = -1;
    if (PsnDiff(ack.cumulativePsn, path.ackedPsn) > 0)
    {
        for (uint32_t psn = path.ackedPsn; psn != ack.cumulativePsn; psn = PsnAdd(psn, 1))
        {
            AckEntry(path, psn, now, ack.triggerPsn, newlyAcked, rttSample);
            path.Entry(psn).state = InflightEntry::FREE;
        }
        path.ackedPsn = ack.cumulativePsn;
    }
    for (uint32_t w = 0; w < 4; ++w)
    {
        uint64_t bits = ack.sack[w];
        while (bits)
        {
            uint32_t i = w * 64 + uint32_t(__builtin_ctzll(bits));
            bits &= bits - 1;
            uint32_t psn = PsnAdd(ack.cumulativePsn, 1 + i);
            if (PsnDiff(psn, path.nextPsn) >= 0)
            {
                w = 4;
                break;
            }
            if (PsnDiff(psn, path.ackedPsn) >= 0)
            {
                AckEntry(path, psn, now, ack.triggerPsn, newlyAcked, rttSample);
            }
        }
    }
    if (rttSample >= 0)
    {
        UpdateRtt(path, rttSample);
        NotifyPath(now, PathEvent::RTT, path);
    }
    if (newlyAcked > 0)
    {
        m_progressTime = now;
    }
    AckEvent ev;
    ev.now = now;
    ev.newlyAcked = newlyAcked;
    ev.ceCount = ack.ceCount;
    ev.ece = (ack.flags & Mah::FLAG_ECE) != 0;
    if (ev.ece)
    {
        path.lastEcn = now;
        path.ecnEchoes += ack.ceCount;
        Count(Counter::ECN_ECHO_RECEIVED);
    }
    double before = path.cwnd;
    if (m_cc->OnAck(path, ev, m_cfg))
    {
        Count(Counter::WINDOW_DECREASE);
    }
    m_lostScratch.clear();
    m_loss->DetectLosses(path, m_cfg, m_lostScratch);
    for (uint32_t psn : m_lostScratch)
    {
        InflightEntry& e = path.Entry(psn);
        e.state = InflightEntry::LOST;
        --path.inflight;
        path.lostPsns.push_back(psn);
        Count(Counter::LOSS_DETECTED);
    }
    if (!m_lostScratch.empty())
    {
        m_cc->OnLoss(path, now, m_cfg);
        NotifyPath(now, PathEvent::LOSS, path);
    }
    if (path.cwnd != before)
    {
        NotifyPath(now, PathEvent::WINDOW, path);
    }
    if (path.inflight > 0 || !path.lostPsns.empty())
    {
        ArmRto(path, now);
    }
    else
    {
        path.rtoDeadline = TIME_INFINITE;
    }
}

void
MultipathConnection::CreditPacket(uint32_t slot, uint32_t generation, uint32_t packetIndex)
{
    if (!PacketWanted(slot, generation, packetIndex))
    {
        return;
    }
    SendMessage& m = m_messages[slot];
    m.acked[packetIndex / 64] |= uint64_t(1) << (packetIndex % 64);
    const Stream& s = m_streams[m.wr.streamId];
    if (s.rnrHold && ConsumesRecv(m.wr.opcode) && int32_t(m.recvSlot - s.rnrSlot) >= 0)
    {
        ReleaseRnr(m.wr.streamId); // the receive it waited for is there now
    }
    if (++m.packetsAcked == m.numPackets)
    {
        m.finished = true;
        m.status = WcStatus::SUCCESS;
        Count(Counter::MESSAGES_SENT);
        CompleteStreamHead(m.wr.streamId);
    }
}

void
MultipathConnection::CompleteStreamHead(uint16_t streamId)
{
    Stream& s = m_streams[streamId];
    while (s.head != NONE && m_messages[s.head].finished)
    {
        uint32_t slot = s.head;
        SendMessage& m = m_messages[slot];
        if (m.wr.signaled || m.status != WcStatus::SUCCESS)
        {
            Completion c;
            c.wrId = m.wr.wrId;
            c.status = m.status;
            c.opcode = (m.wr.opcode == WrOpcode::SEND || m.wr.opcode == WrOpcode::SEND_WITH_IMM)
                           ? WcOpcode::SEND
                           : WcOpcode::RDMA_WRITE;
            c.connectionId = m_qpn;
            c.byteLen = m.wr.sge.length;
            c.streamId = streamId;
            m_ep.PushCompletion(c);
        }
        s.head = m.nextInStream;
        if (s.sendCursor == slot)
        {
            s.sendCursor = m.nextInStream;
        }
        m.inUse = false;
        ++m.generation;
        m_freeSlots.push_back(slot);
        --m_outstanding;
    }
    if (s.head == NONE)
    {
        s.tail = NONE;
    }
}

void
MultipathConnection::HandleNak(Time now, const Mnh& nak)
{
    Count(Counter::RX_NAK);
    if (nak.streamId >= m_streams.size())
    {
        Count(Counter::RX_INVALID);
        return;
    }
    uint32_t slot = m_streams[nak.streamId].head;
    while (slot != NONE && m_messages[slot].messageSeq != nak.messageSeq)
    {
        slot = m_messages[slot].nextInStream;
    }
    if (slot == NONE || m_messages[slot].finished)
    {
        return; // stale: the message is already complete or failed
    }
    SendMessage& m = m_messages[slot];
    if (nak.syndrome != Mnh::RNR)
    {
        EnterError(now, slot, StatusFor(nak.syndrome));
        return;
    }
    // RNR: the responder is alive but has no receive yet. IB counts retries of the message,
    // not NAKed packets: the first NAK of a wait and the answer to each asking packet count;
    // the NAKs of packets that were already on their way do not.
    m_progressTime = now;
    Stream& s = m_streams[nak.streamId];
    const uint32_t packetIndex = nak.offset / m_cfg.mtu;
    bool newWait = !s.rnrHold || int32_t(m.recvSlot - s.rnrSlot) < 0;
    bool answer = s.rnrHold && s.rnrProbeOut && s.rnrProbeSeq == m.messageSeq &&
                  s.rnrProbePacket == packetIndex;
    if (newWait || answer)
    {
        ++m.rnrRetries;
        if (m_cfg.rnrRetryLimit != 7 && m.rnrRetries > m_cfg.rnrRetryLimit)
        {
            EnterError(now, slot, WcStatus::RNR_RETRY_EXC_ERR);
            return;
        }
        if (!s.rnrHold)
        {
            ++m_rnrHeldStreams;
        }
        if (newWait)
        {
            s.rnrSlot = m.recvSlot;
        }
        s.rnrHold = true;
        s.rnrProbeOut = false;
        s.rnrProbeAt = now + m_cfg.rnrRetryDelay;
    }
    // Park the packet until the wait ends, and fill its PSN with a NOP at once: the path's
    // cumulative PSN must not wait on a receive, and an RNR wait is not path silence.
    if (nak.pathId >= m_paths.size() || packetIndex >= m.numPackets)
    {
        return;
    }
    PathState& path = m_paths[nak.pathId];
    if (nak.pathEpoch != path.epoch || PsnDiff(nak.psn, path.ackedPsn) < 0 ||
        PsnDiff(nak.psn, path.nextPsn) >= 0)
    {
        return; // that copy was moved off the path; its resend is NAKed or parked in turn
    }
    InflightEntry& e = path.Entry(nak.psn);
    if ((e.state != InflightEntry::INFLIGHT && e.state != InflightEntry::LOST) ||
        e.messageSlot != slot || e.generation != m.generation || e.packetIndex != packetIndex)
    {
        return;
    }
    if (e.state == InflightEntry::INFLIGHT)
    {
        --path.inflight;
        e.state = InflightEntry::LOST;
        path.lostPsns.push_back(nak.psn);
    }
    e.messageSlot = NONE; // resent as a NOP
    m_rnrParked.push_back(Resend{slot, m.generation, packetIndex, e.retries, true});
}

bool
MultipathConnection::RnrHeld(uint32_t slot) const
{
    const SendMessage& m = m_messages[slot];
    const Stream& s = m_streams[m.wr.streamId];
    return s.rnrHold && ConsumesRecv(m.wr.opcode) && int32_t(m.recvSlot - s.rnrSlot) >= 0;
}

void
MultipathConnection::ReleaseRnr(uint16_t streamId)
{
    Stream& s = m_streams[streamId];
    s.rnrHold = false;
    s.rnrProbeOut = false;
    --m_rnrHeldStreams;
    size_t kept = 0;
    for (const Resend& r : m_rnrParked)
    {
        if (m_messages[r.slot].wr.streamId == streamId)
        {
            m_resends.push_back(r);
        }
        else
        {
            m_rnrParked[kept++] = r;
        }
    }
    m_rnrParked.resize(kept);
    if (s.sendCursor != NONE && !s.inSendRing)
    {
        s.inSendRing = true;
        m_sendStreams.push_back(streamId);
    }
}

void
MultipathConnection::AskAfterRnr(Time now)
{
    // Each stream in an RNR wait lets one parked packet (of the earliest waiting receive slot)
    // ask again every rnrRetryDelay. If it is lost rather than NAKed, another asks one RTO
    // later.
    for (uint16_t sid = 0; sid < m_streams.size() && m_rnrHeldStreams > 0; ++sid)
    {
        Stream& s = m_streams[sid];
        if (!s.rnrHold || s.rnrProbeAt > now)
        {
            continue;
        }
        s.rnrProbeAt = now + m_cfg.rnrRetryDelay + m_cfg.rtoInitial;
        size_t best = m_rnrParked.size();
        for (size_t i = 0; i < m_rnrParked.size(); ++i)
        {
            const SendMessage& m = m_messages[m_rnrParked[i].slot];
            if (m.wr.streamId == sid &&
                (best == m_rnrParked.size() ||
                 int32_t(m.recvSlot - m_messages[m_rnrParked[best].slot].recvSlot) < 0))
            {
                best = i;
            }
        }
        if (best == m_rnrParked.size())
        {
            continue;
        }
        const Resend r = m_rnrParked[best];
        m_rnrParked.erase(m_rnrParked.begin() + long(best));
        s.rnrProbeOut = true;
        s.rnrProbeSeq = m_messages[r.slot].messageSeq;
        s.rnrProbePacket = r.packetIndex;
        m_resends.push_back(r);
    }
}

void
MultipathConnection::ResetPathSequence(PathState& path)
{
    path.epoch = uint8_t(path.epoch + 1);
    path.nextPsn = 0;
    path.ackedPsn = 0;
    path.inflight = 0;
    path.sendCounter = 0;
    path.highestAckedOrder = 0;
    path.anyAcked = false;
    std::fill(path.ring.begin(), path.ring.end(), InflightEntry{});
    path.lostPsns.clear();
    path.probeSentTime = -1;
    path.probesInEpoch = 0;
}

uint16_t
MultipathConnection::FreshSourcePort()
{
    while (true)
    {
        uint16_t port = uint16_t(EPHEMERAL_PORT_BASE + m_ep.rng.Below(16384));
        bool used = false;
        for (const auto& p : m_paths)
        {
            used = used || p.sourcePort == port;
        }
        if (!used)
        {
            return port;
        }
    }
}

void
MultipathConnection::OnRto(Time now, PathState& path)
{
    Count(Counter::RTO);
    ++path.timeouts;
    ++path.consecutiveRtos;
    // Everything outstanding on the path goes to the other paths; the path restarts its
    // PSN space in a new epoch so the responder's cumulative PSN never waits for them.
    for (uint32_t psn = path.ackedPsn; psn != path.nextPsn; psn = PsnAdd(psn, 1))
    {
        const InflightEntry& e = path.Entry(psn);
        if ((e.state == InflightEntry::INFLIGHT || e.state == InflightEntry::LOST) &&
            PacketWanted(e.messageSlot, e.generation, e.packetIndex))
        {
            m_resends.push_back(
                Resend{e.messageSlot, e.generation, e.packetIndex, e.retries, false});
        }
    }
    RetireEpoch(path);
    ResetPathSequence(path);
    if (path.status == PathStatus::ACTIVE)
    {
        m_cc->OnTimeout(path, m_cfg);
    }
    path.rto = std::min(path.rto * 2, m_cfg.rtoMax);
    path.rtoDeadline = TIME_INFINITE;
    NotifyPath(now, PathEvent::TIMEOUT, path);
    if (path.consecutiveRtos >= m_cfg.failureThreshold)
    {
        FailPath(now, path);
        return;
    }
    // Silence, not congestion: carry no data on the path, ask it with a probe whether it
    // still works; an unanswered probe times out like data.
    path.status = PathStatus::SUSPECT;
    m_probeNow |= uint64_t(1) << path.id;
    ArmRto(path, now);
}

Time
MultipathConnection::ProbeInterval()
{
    // Uniform in [0.5, 1.5) x probeInterval: a path that flaps with a period dividing the
    // interval is not probed only while it is down.
    Time base = m_cfg.probeInterval;
    return base / 2 + Time(m_ep.rng.Below(uint64_t(base)));
}

void
MultipathConnection::FailPath(Time now, PathState& path)
{
    path.status = PathStatus::FAILED;
    path.sourcePort = FreshSourcePort(); // steer the path onto another route
    path.probeDeadline = now;
    Count(Counter::PATH_FAILED);
    NotifyPath(now, PathEvent::FAILED, path);
}

void
MultipathConnection::EnterError(Time now, uint32_t failedSlot, WcStatus status)
{
    (void)now;
    m_error = true;
    for (size_t sid = 0; sid < m_streams.size(); ++sid)
    {
        Stream& s = m_streams[sid];
        bool headFailed = false;
        for (uint32_t slot = s.head; slot != NONE; slot = m_messages[slot].nextInStream)
        {
            SendMessage& m = m_messages[slot];
            if (m.finished && m.status == WcStatus::SUCCESS)
            {
                continue;
            }
            m.finished = true;
            if (slot == failedSlot || (failedSlot == NONE && !headFailed))
            {
                m.status = status;
                headFailed = true;
            }
            else
            {
                m.status = WcStatus::WR_FLUSH_ERR;
            }
        }
        CompleteStreamHead(uint16_t(sid));
        s.sendCursor = NONE;
        s.inSendRing = false;
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
    m_sendStreams.clear();
    m_resends.clear();
    m_rnrParked.clear();
    m_rnrHeldStreams = 0;
    for (Stream& s : m_streams)
    {
        s.rnrHold = false;
    }
    m_naks.clear();
    m_ackNow = 0;
    m_probeNow = 0;
    for (PathState& p : m_paths)
    {
        p.lostPsns.clear();
        p.rtoDeadline = TIME_INFINITE;
        p.probeDeadline = TIME_INFINITE;
    }
    for (RecvPath& rp : m_recvPaths)
    {
        rp.ackDeadline = TIME_INFINITE;
    }
}

// ---------------------------------------------------------------------------------------------
// Responder
// ---------------------------------------------------------------------------------------------

PostStatus
MultipathConnection::PostRecv(Time /*now*/, const RecvWr& wr, uint8_t* /*localPtr*/)
{
    // The destination is looked up again for every packet placed (PlaceData), so that a
    // region deregistered after the post is never written.
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
    r.completion.connectionId = m_qpn;
    r.completion.streamId = wr.streamId;
    r.completion.opcode = WcOpcode::RECV;
    s.recvs.push_back(r);
    return PostStatus::OK;
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
        HandleData(now, meta, pkt);
        break;
    case PacketKind::PROBE:
        HandleProbe(now, meta, pkt);
        break;
    case PacketKind::ACK:
        if (pkt.bth.opcode == MR_ACK)
        {
            HandleAck(now, pkt.mah);
        }
        else
        {
            HandleNak(now, pkt.mnh);
        }
        break;
    default:
        Count(Counter::RX_WRONG_TRANSPORT);
        break;
    }
}

void
MultipathConnection::HandleProbe(Time now, const DatagramMeta& meta, const ParsedPacket& pkt)
{
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
    }
    Count(Counter::RX_PROBE);
    rp.srcPort = meta.srcPort; // the reply goes back on the probe's (new) source port
    rp.flags |= Mah::FLAG_PROBE_REPLY;
    ScheduleAck(now, pkt.mdh.pathId, true);
}

void
MultipathConnection::HandleData(Time now, const DatagramMeta& meta, const ParsedPacket& pkt)
{
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
            if (syndrome != SILENT_DROP)
            {
                QueueNak(pkt, syndrome);
            }
            return;
        }
    }
    if (newEpoch)
    {
        rp = fresh;
    }
    rp.srcPort = meta.srcPort;
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
    ++rp.unacked;
    m_ep.NoteDataArrival(now, *this);
    bool immediate = d != 0 || hadGap || meta.ecn == Ecn::CE || duplicate ||
                     rp.unacked >= m_cfg.ackEveryPackets;
    ScheduleAck(now, pkt.mdh.pathId, immediate);
}

bool
MultipathConnection::MessageDone(uint16_t streamId, uint32_t messageSeq) const
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
MultipathConnection::MarkMessageDone(Stream& stream, uint16_t streamId, uint32_t messageSeq)
{
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
MultipathConnection::DeliverRecvCompletions(Stream& stream)
{
    while (!stream.recvs.empty() && stream.recvs.front().done)
    {
        m_ep.PushCompletion(stream.recvs.front().completion);
        stream.recvs.pop_front();
        ++stream.recvBase;
    }
}

uint8_t
MultipathConnection::PlaceData(Time now, const ParsedPacket& pkt, bool& duplicate)
{
    (void)now;
    const OpcodeInfo& info = *pkt.info;
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
        duplicate = true;
        Count(Counter::RX_DUPLICATE);
        return 0;
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
        if (recv->done)
        {
            Count(Counter::RX_INVALID);
            return Mnh::INVALID_REQUEST;
        }
        if (!info.write && length > recv->wr.sge.length)
        {
            // IB: the receive completes in error; the requester gets REM_INV_REQ_ERR.
            recv->done = true;
            recv->completion.status = WcStatus::LOC_LEN_ERR;
            DeliverRecvCompletions(*stream);
            if (m_rejected.size() >= MAX_REJECTED)
            {
                m_rejected.pop_front();
            }
            m_rejected.push_back(Rejected{sid, seq, Mnh::INVALID_REQUEST});
            Count(Counter::RX_INVALID);
            return Mnh::INVALID_REQUEST;
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
            recv->done = true;
            recv->completion.status = WcStatus::LOC_PROT_ERR;
            DeliverRecvCompletions(*stream);
            if (m_rejected.size() >= MAX_REJECTED)
            {
                m_rejected.pop_front();
            }
            m_rejected.push_back(Rejected{sid, seq, Mnh::REMOTE_OPERATION});
            Count(Counter::RX_ACCESS_ERROR);
            return Mnh::REMOTE_OPERATION;
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
                return SILENT_DROP;
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
    // Message complete.
    rec->inUse = false;
    Count(Counter::MESSAGES_RECEIVED);
    if (recv != nullptr)
    {
        recv->done = true;
        recv->completion.status = WcStatus::SUCCESS;
        recv->completion.opcode = info.write ? WcOpcode::RECV_RDMA_WITH_IMM : WcOpcode::RECV;
        recv->completion.byteLen = length;
        recv->completion.hasImm = info.immediate;
        recv->completion.immData = pkt.immDt;
        DeliverRecvCompletions(*stream);
    }
    MarkMessageDone(GetStream(sid), sid, seq);
    return 0;
}

void
MultipathConnection::QueueNak(const ParsedPacket& pkt, uint8_t syndrome)
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
MultipathConnection::ScheduleAck(Time now, uint8_t pathId, bool immediate)
{
    RecvPath& rp = m_recvPaths[pathId];
    if (immediate || m_cfg.ackDelay == 0)
    {
        m_ackNow |= uint64_t(1) << pathId;
        rp.ackDeadline = TIME_INFINITE;
    }
    else if (rp.ackDeadline == TIME_INFINITE)
    {
        rp.ackDeadline = now + m_cfg.ackDelay;
    }
}

bool
MultipathConnection::SendAck(Time now, TxDatagram& out, uint8_t pathId)
{
    RecvPath& rp = m_recvPaths[pathId];
    ParsedPacket pkt;
    pkt.info = &LookupOpcode(MR_ACK);
    pkt.bth.opcode = MR_ACK;
    pkt.bth.destQp = m_remoteQpn;
    pkt.mah.pathId = pathId;
    pkt.mah.pathEpoch = rp.epoch;
    pkt.mah.flags = rp.flags;
    pkt.mah.ceCount = uint8_t(std::min<uint32_t>(rp.ceCount, 255));
    pkt.mah.cumulativePsn = rp.cumulativePsn;
    pkt.mah.triggerPsn = rp.triggerPsn;
    pkt.mah.rateHint = m_ep.RateHintMbps(now);
    pkt.mah.sack = rp.bits;
    rp.unacked = 0;
    rp.ceCount = 0;
    rp.flags = 0;
    rp.ackDeadline = TIME_INFINITE;
    Count(Counter::TX_ACK);
    return EmitDatagram(out, pkt, nullptr, 0, Ecn::NOT_ECT, rp.srcPort);
}

// ---------------------------------------------------------------------------------------------
// Timers
// ---------------------------------------------------------------------------------------------

Time
MultipathConnection::NextDeadline() const
{
    if (m_error)
    {
        return TIME_INFINITE;
    }
    Time t = TIME_INFINITE;
    for (const PathState& p : m_paths)
    {
        t = std::min(t, p.rtoDeadline);
        if (p.status == PathStatus::FAILED)
        {
            t = std::min(t, p.probeDeadline);
        }
    }
    for (const RecvPath& rp : m_recvPaths)
    {
        t = std::min(t, rp.ackDeadline);
    }
    if (m_rnrHeldStreams > 0)
    {
        for (const Stream& s : m_streams)
        {
            if (s.rnrHold)
            {
                t = std::min(t, s.rnrProbeAt); // always moved ahead when reached
            }
        }
    }
    bool dataPending = HasNewData() || HasResendReady();
    if (m_pacingRate > 0 && dataPending && m_nextSendTime > m_now)
    {
        t = std::min(t, m_nextSendTime); // pacing release: likewise only if ahead
    }
    if (m_outstanding > 0)
    {
        t = std::min(t, m_progressTime + m_cfg.connectionTimeout);
    }
    return t;
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
        m_progressTime += now - since;
    }
    m_now = now;
    if (m_rnrHeldStreams > 0)
    {
        AskAfterRnr(now);
    }
    if (m_outstanding > 0 && now - m_progressTime >= m_cfg.connectionTimeout)
    {
        EnterError(now, NONE, WcStatus::RETRY_EXC_ERR);
        return;
    }
    for (PathState& p : m_paths)
    {
        if (p.rtoDeadline <= now)
        {
            OnRto(now, p);
        }
        if (p.status == PathStatus::FAILED && p.probeDeadline <= now)
        {
            m_probeNow |= uint64_t(1) << p.id;
            p.probeDeadline = now + ProbeInterval();
        }
    }
    for (size_t i = 0; i < m_recvPaths.size(); ++i)
    {
        if (m_recvPaths[i].ackDeadline <= now)
        {
            m_ackNow |= uint64_t(1) << i;
            m_recvPaths[i].ackDeadline = TIME_INFINITE;
        }
    }
}

} // namespace metaroce
