/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-multipath-requester.h"

#include "metaroce-multipath-connection.h"

#include <algorithm>
#include <cstring>

namespace metaroce
{

namespace
{

/// \return the MetaRoCE opcode carrying a packet of \p op; \p last: the message's last
/// packet. The immediate (and a WRITE's receive slot) travels in the last packet only, as in
/// IB's WRITE/SEND Last with Immediate: the receiver keeps it until the message is complete,
/// whichever packet completes it (docs/wire-format.md).
uint8_t
OpcodeFor(WrOpcode op, bool last)
{
    switch (op)
    {
    case WrOpcode::RDMA_WRITE:
        return MR_WRITE;
    case WrOpcode::RDMA_WRITE_WITH_IMM:
        return last ? MR_WRITE_IMM : MR_WRITE;
    case WrOpcode::SEND:
        return MR_SEND;
    case WrOpcode::SEND_WITH_IMM:
        return last ? MR_SEND_IMM : MR_SEND;
    case WrOpcode::RDMA_READ:
        return MR_READ_REQUEST;
    case WrOpcode::ATOMIC_CMP_AND_SWP:
        return MR_CMP_SWAP;
    case WrOpcode::ATOMIC_FETCH_AND_ADD:
        return MR_FETCH_ADD;
    }
    return MR_WRITE;
}

} // namespace

MultipathRequester::MultipathRequester(MultipathConnection& conn)
    : MultipathRole(conn),
      m_scheduler(CreatePathScheduler(conn.Config().pathScheduler)),
      m_loss(CreateLossDetection(conn.Config().lossDetection)),
      m_timers(0),
      m_rateHint(conn.Config().lineRateBps),
      m_initialPathWindow(conn.Config().initialPathWindow),
      m_timeLoss(m_loss && m_loss->UsesTime()),
      m_tailProbe(conn.Config().tailProbe != "none"),
      m_tailProbeAfterRto(conn.Config().tailProbe == "tlp-rto"),
      m_crossPathFailure(conn.Config().failureDetection == "cross-path"),
      m_adaptiveRto(conn.Config().rtoPolicy == "adaptive"),
      m_returnShare(conn.Config().returnWindow == "share"),
      m_holdConfirming(conn.Config().confirmHold == "hold"),
      m_perConnectionStart(conn.Config().initialWindow != "per-path"),
      m_coalescedAcks(conn.Config().ackPolicy == "coalesced"),
      m_repeatedAcks(m_coalescedAcks && conn.Config().ackRepeat > 0),
      m_longPathPacing(conn.Config().longPathPacingGain > 0 && conn.Config().slowStartMinRtt > 0)
{
    m_pacer.SetSlack(m_ep.Config().pacingSlack);
    if (m_perConnectionStart)
    {
        // "bdp": the whole first flight, over the paths the scheduler sends on.
        const bool bdp = m_cfg.initialWindow == "bdp";
        const uint32_t sendPaths = bdp ? m_scheduler->PathsInUse(m_cfg.numPaths) : m_cfg.numPaths;
        const double cap = bdp ? m_cfg.maxPathWindow : m_cfg.initialPathWindow;
        m_initialPathWindow =
            std::max(m_cfg.minPathWindow, std::min(cap, m_cfg.initialConnectionWindow / sendPaths));
    }
    // The ports are drawn now, in connection order, whenever the paths are created.
    m_portBase = m_cfg.sourcePortBase;
    if (m_portBase == 0 || uint32_t(m_portBase) + m_cfg.numPaths > 65536)
    {
        m_portBase = uint16_t(EPHEMERAL_PORT_BASE + m_ep.rng.Below(16384 - m_cfg.numPaths));
    }
}

PathState
MultipathRequester::FreshPath(uint32_t i) const
{
    PathState p;
    p.id = uint8_t(i);
    p.sourcePort = uint16_t(m_portBase + i);
    p.cwnd = m_initialPathWindow;
    p.rtt.Reset(m_cfg.rtoInitial);
    p.jitterState = m_ep.Config().seed ^ (uint64_t(Qpn()) << 8) ^ i;
    p.sackWindow = m_cfg.sackWindow;
    return p;
}

void
MultipathRequester::CreatePaths()
{
    // Half of the connection ends of a permutation never send: their paths need no state.
    m_paths.reserve(m_cfg.numPaths);
    m_cc.reserve(m_cfg.numPaths);
    for (uint32_t i = 0; i < m_cfg.numPaths; ++i)
    {
        m_paths.push_back(FreshPath(i));
        m_cc.push_back(CreateCongestionControl(m_cfg.congestionControl));
    }
    m_indexedInflight.assign(m_cfg.numPaths, 0);
    for (const PathState& p : m_paths)
    {
        SyncPathIndex(p);
    }
    m_timers.SetPathCount(m_cfg.numPaths);
    m_idleView.reset();
}

const PathState*
MultipathRequester::Path(size_t i) const
{
    if (i >= m_cfg.numPaths)
    {
        return nullptr;
    }
    if (!m_paths.empty())
    {
        return &m_paths[i];
    }
    if (!m_idleView)
    {
        m_idleView = std::make_unique<PathState>();
    }
    *m_idleView = FreshPath(uint32_t(i));
    return m_idleView.get();
}

size_t
MultipathRequester::HeapBytes() const
{
    size_t bytes = 0;
    for (const auto& p : m_paths)
    {
        bytes += sizeof(p) + p.ring.capacity() * sizeof(InflightEntry) +
                 p.retiredRing.capacity() * sizeof(InflightEntry) +
                 p.lostPsns.capacity() * sizeof(uint32_t);
    }
    bytes += m_streams.capacity() * sizeof(Stream);
    for (const auto& m : m_messages)
    {
        bytes += sizeof(m) + (m.acked.capacity() + m.placed.capacity()) * sizeof(uint64_t);
    }
    bytes += m_rdAtomicSlots.capacity() * sizeof(uint32_t) +
             m_indexedInflight.capacity() * sizeof(uint32_t);
    bytes += m_freeSlots.capacity() * sizeof(uint32_t) + m_resends.CapacityBytes() +
             m_sendStreams.CapacityBytes() + m_rnrParked.capacity() * sizeof(Resend) +
             m_ackRecords.capacity() * sizeof(AckRecord) +
             m_ackProgress.capacity() * sizeof(AckProgress) + m_timers.HeapBytes();
    return bytes;
}

MultipathRequester::Stream&
MultipathRequester::GetStream(uint16_t id)
{
    if (id == m_cfg.maxStreams)
    {
        return m_answers;
    }
    if (id >= m_streams.size())
    {
        m_streams.resize(size_t(id) + 1);
    }
    return m_streams[id];
}

uint32_t
MultipathRequester::AllocateSlot()
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

uint32_t
MultipathRequester::EnqueueMessage(Time now, const SendWr& wr, uint32_t numPackets)
{
    uint32_t slot = AllocateSlot();
    SendMessage& m = m_messages[slot];
    Stream& s = GetStream(wr.streamId);
    m.wr = wr;
    m.messageSeq = s.nextMessageSeq++;
    m.recvSlot = ConsumesRecv(wr.opcode) ? s.nextRecvSlot++ : 0;
    m.numPackets = numPackets;
    m.nextPacket = 0;
    m.packetsAcked = 0;
    m.acked.assign((m.numPackets + 63) / 64, 0);
    m.nextInStream = NONE;
    m.rnrRetries = 0;
    m.status = WcStatus::SUCCESS;
    m.finished = false;
    m.inUse = true;
    m.response = false;
    m.rdAtomicIssued = false;
    m.answerStream = 0;
    m.answerSeq = 0;
    m.original = 0;
    m.responsePackets = 0;
    m.responsesPlaced = 0;
    m.placed.clear();
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
    if (!s.inSendRing && !s.rdAtomicHold)
    {
        s.inSendRing = true;
        m_sendStreams.push_back(wr.streamId);
    }
    if (m_outstanding == 0)
    {
        m_progressTime = now;
    }
    ++m_outstanding;
    SyncConnectionTimer();
    return slot;
}

PostStatus
MultipathRequester::PostSend(Time now, const SendWr& wr)
{
    // The source is looked up again for every packet sent (TransmitPacket), so that a region
    // deregistered after the post is never read.
    EnsurePaths();
    if (wr.streamId >= m_cfg.maxStreams)
    {
        return PostStatus::INVALID_STREAM;
    }
    if (wr.sge.length > m_cfg.maxMessageSize)
    {
        return PostStatus::TOO_LONG;
    }
    if (IsAtomic(wr.opcode) && wr.sge.length != ATOMIC_OPERAND_SIZE)
    {
        return PostStatus::INVALID_ARGUMENT; // the original value is one 64-bit word
    }
    if (m_outstanding - m_responsesHeld >= m_cfg.maxOutstandingWrs)
    {
        return PostStatus::QUEUE_FULL;
    }
    // A READ or atomic request is one packet; its answer comes back in responsePackets.
    uint32_t slot =
        EnqueueMessage(now,
                       wr,
                       IsReadOrAtomic(wr.opcode) ? 1 : PacketsFor(wr.sge.length, m_cfg.mtu));
    SendMessage& m = m_messages[slot];
    m.responsePackets = wr.opcode == WrOpcode::RDMA_READ ? PacketsFor(wr.sge.length, m_cfg.mtu)
                        : IsAtomic(wr.opcode)            ? 1
                                                         : 0;
    m.placed.assign(wr.opcode == WrOpcode::RDMA_READ ? (m.responsePackets + 63) / 64 : 0, 0);
    return PostStatus::OK;
}

bool
MultipathRequester::HasNewData() const
{
    return !m_sendStreams.empty();
}

bool
MultipathRequester::NextNewPacket(uint32_t& slot, uint32_t& packetIndex)
{
    while (!m_sendStreams.empty())
    {
        uint16_t sid = m_sendStreams.front();
        m_sendStreams.pop_front();
        Stream& s = GetStream(sid);
        while (s.sendCursor != NONE &&
               m_messages[s.sendCursor].nextPacket >= m_messages[s.sendCursor].numPackets)
        {
            s.sendCursor = m_messages[s.sendCursor].nextInStream;
        }
        if (s.sendCursor == NONE || RnrHeld(s.sendCursor, m_messages[s.sendCursor].nextPacket))
        {
            s.inSendRing = false; // ReleaseRnr puts a held stream back
            continue;
        }
        SendMessage& m = m_messages[s.sendCursor];
        if (IsReadOrAtomic(m.wr.opcode) && !m.response && !m.rdAtomicIssued)
        {
            if (m_rdAtomicSlots.size() >= m_cfg.maxRdAtomic || OrderedBehind(s, s.sendCursor))
            {
                // IB max_rd_atomic: the stream waits (in order) until a READ or atomic ends;
                // and a READ or atomic sees what the stream did before it (below).
                s.inSendRing = false;
                s.rdAtomicHold = true;
                ++m_rdAtomicHeldStreams;
                continue;
            }
            m.rdAtomicIssued = true;
            m_rdAtomicSlots.push_back(s.sendCursor);
        }
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
MultipathRequester::PacketWanted(uint32_t slot, uint32_t generation, uint32_t packetIndex) const
{
    if (slot == NONE || slot >= m_messages.size())
    {
        return false;
    }
    const SendMessage& m = m_messages[slot];
    return m.inUse && m.generation == generation && !m.finished &&
           !((m.acked[packetIndex / 64] >> (packetIndex % 64)) & 1);
}

void
MultipathRequester::SyncPathIndex(const PathState& path)
{
    m_withRoom.Assign(path.id, path.Usable() && path.inflight < uint32_t(path.cwnd));
    m_hasRoom.Assign(path.id, path.HasRoom());
    m_withLosses.Assign(path.id, !path.lostPsns.empty());
    m_confirming.Assign(path.id, path.confirmOut);
    m_inflightTotal += path.inflight - m_indexedInflight[path.id];
    m_indexedInflight[path.id] = path.inflight;
}

std::string
MultipathRequester::CheckInflightIndex() const
{
    uint32_t inflight = 0;
    for (const PathState& p : m_paths)
    {
        inflight += p.inflight;
        if (m_indexedInflight[p.id] != p.inflight)
        {
            return "path " + std::to_string(p.id) + " has " + std::to_string(p.inflight) +
                   " packets in flight, the path index " + std::to_string(m_indexedInflight[p.id]);
        }
    }
    if (inflight != m_inflightTotal)
    {
        return "the paths have " + std::to_string(inflight) +
               " packets in flight, the path index " + std::to_string(m_inflightTotal);
    }
    return {};
}

std::string
MultipathRequester::CheckInvariants() const
{
    std::string why = CheckInflightIndex();
    if (!why.empty())
    {
        return why;
    }
    PathSet withRoom;
    PathSet hasRoom;
    PathSet withLosses;
    PathSet confirming;
    for (const PathState& p : m_paths)
    {
        withRoom.Assign(p.id, p.Usable() && p.inflight < uint32_t(p.cwnd));
        hasRoom.Assign(p.id, p.HasRoom());
        withLosses.Assign(p.id, !p.lostPsns.empty());
        confirming.Assign(p.id, p.confirmOut);
    }
    if (!(withRoom == m_withRoom))
    {
        return "the path index's paths with window room are stale";
    }
    if (!(hasRoom == m_hasRoom))
    {
        return "the path index's paths with room (HasRoom) are stale";
    }
    if (!(withLosses == m_withLosses))
    {
        return "the path index's paths with lost PSNs are stale";
    }
    if (!(confirming == m_confirming))
    {
        return "the path index's paths awaiting a confirmation are stale";
    }
    return {};
}

void
MultipathRequester::NoteStalePathIndex(bool inflightOnly) const
{
    if (!m_ep.invariantFailure.empty())
    {
        return; // the first one tells most
    }
    std::string why = inflightOnly ? CheckInflightIndex() : CheckInvariants();
    if (!why.empty())
    {
        m_ep.invariantFailure = "QP " + std::to_string(Qpn()) + ", read while stale: " + why;
    }
}

bool
MultipathRequester::ConnectionWindowOpen() const
{
    return TotalInflight() < uint32_t(ConnectionWindow());
}

double
MultipathRequester::ConnectionWindow() const
{
    double window = m_cfg.connectionWindow;
    if (!m_anyAck && m_perConnectionStart)
    {
        window = std::min(window, m_cfg.initialConnectionWindow); // the first flight
    }
    return window;
}

bool
MultipathRequester::AckRequested(const PathState& path,
                                 uint32_t slot,
                                 uint32_t packetIndex,
                                 bool resend) const
{
    // The responder holds ACKs for ackCoalescePackets packets; a packet after which this
    // requester pauses must not wait for packets that will not come: it asks for the ACK
    // (IB's AckReq). The requester pauses after a resend or NOP (loss repair wants feedback),
    // the last packet of a message, the last packet it has, or when every window is full.
    // A window of fewer than 4 batches of ackCoalescePackets asks for every ACK: the held
    // packets of a batch would be a large share of what the window lets out per round trip.
    if (!m_coalescedAcks || slot == NONE || resend ||
        packetIndex + 1 >= m_messages[slot].numPackets || (!HasNewData() && !HasResendReady()))
    {
        return true;
    }
    // The usable windows' sum, in path order, stops as soon as it reaches the bound (a sum
    // of windows only grows): a few paths, not all of them.
    const double bound = 4.0 * m_cfg.ackCoalescePackets;
    double windows = 0;
    for (const PathState& p : m_paths)
    {
        if (p.Usable())
        {
            windows += p.cwnd;
            if (windows >= bound)
            {
                break;
            }
        }
    }
    if (windows < bound)
    {
        return true;
    }
    if (path.inflight + 1 < uint32_t(path.cwnd))
    {
        return false; // the path has room for more after this packet
    }
    VerifyPathIndex(false);
    PathSet others = m_withRoom;
    others.Assign(path.id, false);
    return !others.Any() || TotalInflight() + 1 >= uint32_t(ConnectionWindow());
}

int
MultipathRequester::PathWithPendingLoss() const
{
    VerifyPathIndex(false);
    PathSet ready = m_withLosses.Intersect(m_withRoom);
    return ready.Any() ? int(ready.First()) : -1;
}

bool
MultipathRequester::HasResendReady() const
{
    return !m_resends.empty();
}

double
MultipathRequester::WindowPacingRate() const
{
    // (A pass over the paths per call, on long paths only: PacingRate() checks first.)
    double windows = 0;
    for (const PathState& p : m_paths)
    {
        if (p.Usable())
        {
            windows += p.cwnd;
        }
    }
    windows = std::max(1.0, std::min(windows, m_cfg.connectionWindow));
    const Time srtt = std::max(FallbackRtt(), m_minRtt);
    return m_cfg.longPathPacingGain * windows * (m_cfg.mtu + WIRE_OVERHEAD_BYTES) * 8.0 /
           (double(srtt) * 1e-12);
}

double
MultipathRequester::ShareWindow(const PathState& path) const
{
    // The returned path's route was idle while the others carried its traffic: it can take a
    // share of the connection's window at once (the other paths' windows shrink by ECN if it
    // cannot). (A pass over the paths, once per returned path.)
    double sum = 0;
    uint32_t n = 0;
    for (const PathState& p : m_paths)
    {
        if (p.status == PathStatus::ACTIVE && p.id != path.id)
        {
            sum += p.cwnd;
            ++n;
        }
    }
    return std::max(m_initialPathWindow, n > 0 ? sum / n : 0.0);
}

bool
MultipathRequester::AtTail() const
{
    return !HasNewData() && !HasResendReady();
}

bool
MultipathRequester::WantsToSend(Time now) const
{
    if (m_probeNow.Any())
    {
        return true;
    }
    if (PacingRate() > 0 && !m_pacer.MayTransmit(now))
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
    VerifyPathIndex(false);
    return m_hasRoom.Any();
}

bool
MultipathRequester::SendDueProbe(Time now, TxDatagram& out)
{
    return SendProbe(now, out, m_paths[m_probeNow.PopFirst()]);
}

PathSet
MultipathRequester::SendablePaths(Time now) const
{
    if (!m_holdConfirming || !m_confirming.Any())
    {
        return m_hasRoom;
    }
    // "hold": a path asked to confirm an overdue packet that has also been silent for a round
    // trip (no ACK of its own) takes nothing more until the reply, while another path has
    // room; a path that lost a packet but still acknowledges the others keeps sending.
    const Time silence = FallbackRtt();
    PathSet held;
    for (PathSet c = m_confirming.Intersect(m_hasRoom); c.Any();)
    {
        const PathState& p = m_paths[c.PopFirst()];
        if (silence >= 0 && now - p.lastAck > silence)
        {
            held.Insert(p.id);
        }
    }
    const PathSet others = m_hasRoom.Without(held);
    return others.Any() ? others : m_hasRoom;
}

bool
MultipathRequester::PollData(Time now, TxDatagram& out)
{
    double rate = PacingRate();
    if (rate > 0 && !m_pacer.MayTransmit(now))
    {
        return false;
    }
    bool sent = SendData(now, out);
    if (sent && rate > 0)
    {
        m_pacer.OnTransmit(now, out.length + WIRE_OVERHEAD_BYTES, rate);
    }
    return sent;
}

bool
MultipathRequester::SendData(Time now, TxDatagram& out)
{
    // 1. Exactly the PSNs a SACK gap revealed, at once, on the path that lost them (the
    // paths with lost PSNs and window room, in path order).
    VerifyPathIndex(false);
    for (PathSet ready = m_withLosses.Intersect(m_withRoom); ready.Any();)
    {
        PathState& path = m_paths[ready.PopFirst()];
        PathIndexSync sync(*this, path);
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
            // A resend that a SACK gap asked for does not spend the retry budget: later
            // packets of the path got through, which is progress (IB's retry_cnt counts
            // timeouts without progress). Under a link that flaps faster than a round trip
            // such resends lose far more often than the link's loss rate.
            Resend same{slot, e.generation, e.packetIndex, false, e.timeouts, e.progressStamp};
            return TransmitPacket(now, out, path, psn, slot, e.packetIndex, &same);
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
        if (RnrHeld(r.slot, r.packetIndex) && !r.rnr)
        {
            m_resends.pop_front();
            m_rnrParked.push_back(r); // would only be NAKed again: wait with the others
            continue;
        }
        VerifyPathIndex(false);
        int pid = m_scheduler->Select(m_paths, SendablePaths(now), now);
        if (pid < 0)
        {
            return false;
        }
        m_resends.pop_front();
        PathState& path = m_paths[pid];
        return TransmitPacket(now, out, path, path.nextPsn, r.slot, r.packetIndex, &r);
    }
    // 3. New data, sprayed.
    if (!HasNewData())
    {
        return false;
    }
    VerifyPathIndex(false);
    int pid = m_scheduler->Select(m_paths, SendablePaths(now), now);
    uint32_t slot;
    uint32_t packetIndex;
    if (pid < 0 || !NextNewPacket(slot, packetIndex))
    {
        return false;
    }
    PathState& path = m_paths[pid];
    return TransmitPacket(now, out, path, path.nextPsn, slot, packetIndex, nullptr);
}

bool
MultipathRequester::TransmitPacket(Time now,
                                   TxDatagram& out,
                                   PathState& path,
                                   uint32_t psn,
                                   uint32_t slot,
                                   uint32_t packetIndex,
                                   const Resend* resend)
{
    const bool retransmission = resend != nullptr;
    ParsedPacket pkt;
    pkt.bth.destQp = RemoteQpn();
    pkt.bth.ackReq = AckRequested(path, slot, packetIndex, retransmission);
    pkt.bth.psn = psn;
    pkt.mdh.pathId = path.id;
    pkt.mdh.pathEpoch = path.epoch;
    const uint8_t* payload = nullptr;
    uint32_t payloadLength = 0;
    uint32_t generation = 0;
    if (slot != NONE && m_messages[slot].response)
    {
        // An answer to the peer's READ or atomic. A READ's source must still be registered
        // with remote read access when the bytes are read (IB); if it is not, the request is
        // NAKed, the answer dropped, and its PSN filled with a NOP.
        SendMessage& m = m_messages[slot];
        generation = m.generation;
        uint32_t offset = packetIndex * m_cfg.mtu;
        bool read = m.wr.opcode == WrOpcode::RDMA_READ;
        payloadLength = read ? std::min(m_cfg.mtu, m.wr.sge.length - offset) : 0;
        uint8_t* src = nullptr;
        if (payloadLength > 0 && m_ep.memory.Check(m.wr.rkey,
                                                   m.wr.remoteAddr + offset,
                                                   payloadLength,
                                                   ACCESS_REMOTE_READ,
                                                   &src) != PostStatus::OK)
        {
            Count(Counter::RX_ACCESS_ERROR);
            m_conn.Responder().QueueRequestNak(m.answerStream, m.answerSeq, Mnh::REMOTE_ACCESS);
            FinishMessage(slot);
            slot = NONE;
            payloadLength = 0;
        }
        else
        {
            payload = src;
            pkt.bth.opcode = read ? MR_READ_RESPONSE : MR_ATOMIC_RESPONSE;
            pkt.mdh.streamId = m.answerStream;
            pkt.mdh.messageSeq = m.answerSeq;
            pkt.mdh.offset = offset;
            pkt.atomicAckEth.original = m.original;
        }
    }
    else if (slot != NONE)
    {
        const SendMessage& m = m_messages[slot];
        generation = m.generation;
        uint32_t offset = packetIndex * m_cfg.mtu;
        // A READ or atomic request carries no payload (its SGE is where the answer lands).
        payloadLength =
            IsReadOrAtomic(m.wr.opcode) ? 0 : std::min(m_cfg.mtu, m.wr.sge.length - offset);
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
        pkt.bth.opcode = OpcodeFor(m.wr.opcode, packetIndex + 1 >= m.numPackets);
        pkt.bth.solicited =
            (m.wr.opcode == WrOpcode::SEND || m.wr.opcode == WrOpcode::SEND_WITH_IMM);
        pkt.mdh.streamId = m.wr.streamId;
        pkt.mdh.messageSeq = m.messageSeq;
        pkt.mdh.offset = offset;
        pkt.reth.va = m.wr.remoteAddr + offset;
        pkt.reth.rkey = m.wr.rkey;
        pkt.reth.dmaLength = m.wr.sge.length;
        pkt.rsh.recvSlot = m.recvSlot;
        pkt.rsh.messageLength = m.wr.sge.length;
        pkt.immDt = m.wr.immData;
        bool cas = m.wr.opcode == WrOpcode::ATOMIC_CMP_AND_SWP;
        pkt.atomicEth.va = m.wr.remoteAddr;
        pkt.atomicEth.rkey = m.wr.rkey;
        pkt.atomicEth.swapAdd = cas ? m.wr.swap : m.wr.compareAdd;
        pkt.atomicEth.compare = cas ? m.wr.compareAdd : 0;
    }
    if (slot == NONE)
    {
        pkt.bth.opcode = MR_NOP;
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
            // Sized by use: with 128 paths a path of a 2 MiB flow carries a few packets.
            size_t size = std::max<size_t>(2, path.ring.size());
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
    e.timeouts = resend ? resend->timeouts : 0;
    e.progressStamp = resend ? resend->progressStamp : m_progressCount;
    ++path.inflight;
    SyncPathIndex(path);
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
    if (!m_timers.Armed(path.id, RequesterPathTimer::RTO))
    {
        ArmRto(path, now);
    }
    if (m_timeLoss && !m_timers.Armed(path.id, RequesterPathTimer::LOSS) &&
        !path.lossAwaitsEvidence)
    {
        m_timers.Set(path.id,
                     RequesterPathTimer::LOSS,
                     m_loss->DueTime(path, MakeLossContext(now), now));
    }
    if (m_tailProbe && !m_tailProbeOut)
    {
        ArmTailProbe(now);
    }
    return true;
}

void
MultipathRequester::CreditPacket(uint32_t slot, uint32_t generation, uint32_t packetIndex)
{
    if (!PacketWanted(slot, generation, packetIndex))
    {
        return;
    }
    SendMessage& m = m_messages[slot];
    m.acked[packetIndex / 64] |= uint64_t(1) << (packetIndex % 64);
    const Stream& s = GetStream(m.wr.streamId);
    if (s.rnrHold && PacketConsumesRecv(m.wr.opcode, packetIndex, m.numPackets) &&
        int32_t(m.recvSlot - s.rnrSlot) >= 0)
    {
        ReleaseRnr(m.wr.streamId); // the receive it waited for is there now
    }
    // A READ or atomic request that arrived finishes when its answer is placed.
    if (++m.packetsAcked == m.numPackets)
    {
        if (m.responsesPlaced == m.responsePackets)
        {
            FinishMessage(slot);
        }
        ReleaseRdAtomicHolds(); // a READ or atomic behind it may go now
    }
}

void
MultipathRequester::FinishMessage(uint32_t slot)
{
    SendMessage& m = m_messages[slot];
    m.finished = true;
    m.status = WcStatus::SUCCESS;
    if (m.response)
    {
        --m_responsesHeld;
    }
    else
    {
        Count(Counter::MESSAGES_SENT);
    }
    if (m.rdAtomicIssued)
    {
        FinishRequest(slot);
    }
    CompleteStreamHead(m.wr.streamId);
}

void
MultipathRequester::CompleteStreamHead(uint16_t streamId)
{
    Stream& s = GetStream(streamId);
    while (s.head != NONE && m_messages[s.head].finished)
    {
        uint32_t slot = s.head;
        SendMessage& m = m_messages[slot];
        if (!m.response && (m.wr.signaled || m.status != WcStatus::SUCCESS))
        {
            Completion c;
            c.wrId = m.wr.wrId;
            c.status = m.status;
            c.opcode = WcOpcodeFor(m.wr.opcode);
            c.connectionId = Qpn();
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
    SyncConnectionTimer();
    if (s.head == NONE)
    {
        s.tail = NONE;
    }
}

uint32_t
MultipathRequester::FirstUnfinishedWork() const
{
    for (const Stream& s : m_streams)
    {
        for (uint32_t slot = s.head; slot != NONE; slot = m_messages[slot].nextInStream)
        {
            const SendMessage& m = m_messages[slot];
            if (!m.finished && !m.response)
            {
                return slot;
            }
        }
    }
    return NONE;
}

void
MultipathRequester::FlushStream(uint16_t sid, uint32_t failedSlot, WcStatus status)
{
    if (sid >= m_streams.size())
    {
        return;
    }
    // Every message still in the stream is behind its unfinished head (finished heads are
    // completed at once). A later message that was already acknowledged keeps SUCCESS only
    // if the responder surfaces it: a WRITE's bytes are in place, and a receive-consuming
    // message completes its receive unless an earlier failed or flushed message of the
    // stream holds a receive slot before it (receives complete in slot order). Otherwise it
    // is flushed, so the two ends never disagree.
    Stream& s = m_streams[sid];
    bool receivesBlocked = false;
    for (uint32_t slot = s.head; slot != NONE; slot = m_messages[slot].nextInStream)
    {
        SendMessage& m = m_messages[slot];
        bool consumes = ConsumesRecv(m.wr.opcode);
        if (m.finished && m.status == WcStatus::SUCCESS && !(consumes && receivesBlocked))
        {
            continue;
        }
        receivesBlocked = receivesBlocked || consumes;
        m.finished = true;
        m.status = slot == failedSlot ? status : WcStatus::WR_FLUSH_ERR;
    }
    CompleteStreamHead(sid);
    s.sendCursor = NONE;
    s.inSendRing = false;
}

void
MultipathRequester::ClearAfterError()
{
    m_responsesHeld = 0;
    m_rdAtomicSlots.clear();
    m_rdAtomicHeldStreams = 0;
    m_sendStreams.clear();
    m_resends.clear();
    m_rnrParked.clear();
    m_rnrHeldStreams = 0;
    for (Stream& s : m_streams)
    {
        s.rnrHold = false;
        s.rdAtomicHold = false;
    }
    m_probeNow.Clear();
    m_timers.ClearAll();
    SyncConnectionTimer(); // (kept as FlushStream left it; the error state ignores it)
    for (PathState& p : m_paths)
    {
        p.lostPsns.clear();
        p.lossAwaitsEvidence = false;
        SyncPathIndex(p);
    }
}

} // namespace metaroce
