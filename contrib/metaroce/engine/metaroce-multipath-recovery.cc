/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The requester's timers, path health and RNR waits (see metaroce-multipath-requester.h).

#include "metaroce-multipath-requester.h"

#include <algorithm>

namespace metaroce
{

namespace
{

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

bool
MultipathRequester::SendProbe(Time now, TxDatagram& out, PathState& path)
{
    if (path.status == PathStatus::ACTIVE && path.confirmOut)
    {
        // A confirmation probe: it follows every packet the path has sent so far, so its
        // reply acknowledges each of them that arrived (DetectLosses). A second probe asks
        // about the same packets, so a late reply to the first one means the same.
        if (path.confirmProbes == 0)
        {
            path.confirmPsn = path.nextPsn;
            path.confirmFirst = now;
        }
        path.confirmProbes = uint8_t(std::min(path.confirmProbes + 1, 255));
        path.confirmSent = now;
        path.confirmSerial = PsnAdd(path.confirmSerial, path.confirmSerial == PSN_MASK ? 2 : 1);
        Count(Counter::CONFIRM_PROBE);
    }
    else
    {
        path.probeSentTime = now;
        ++path.probesInEpoch;
    }
    ParsedPacket pkt;
    pkt.info = &LookupOpcode(MR_PROBE);
    pkt.bth.opcode = MR_PROBE;
    pkt.bth.destQp = RemoteQpn();
    pkt.bth.ackReq = true;
    // A confirmation probe's serial, which its reply echoes in TriggerPsn: a late reply to
    // an earlier confirmation is not taken for this one's.
    pkt.bth.psn = path.status == PathStatus::ACTIVE && path.confirmOut ? path.confirmSerial : 0;
    pkt.mdh.pathId = path.id;
    pkt.mdh.pathEpoch = path.epoch;
    Count(Counter::TX_PROBE);
    return EmitDatagram(out, pkt, nullptr, 0, Ecn::ECT0, path.sourcePort);
}

void
MultipathRequester::ArmRto(PathState& path, Time now)
{
    // Up to a quarter of the RTO of jitter, so that retransmissions do not lock in phase
    // with a periodic outage (a flapping link). It comes from the path's own generator,
    // seeded from the endpoint seed, the QPN and the path, so that it neither draws from
    // the endpoint's PRNG nor changes any other random choice.
    Time rto = path.rtt.Rto();
    if (m_coalescedAcks)
    {
        // The peer may hold an ACK for up to ackDelay, and the RTT samples leave holding
        // out: the timer adds it back, as QUIC's PTO adds max_ack_delay (RFC 9002, 6.2.1).
        rto += m_cfg.ackDelay;
    }
    if (m_adaptiveRto && path.rtt.HasSample() && PacingRate() > 0)
    {
        // What the receiver knows: with N active senders its hint is its line rate / N, so
        // the connection's packets in flight drain from an incast queue in about this time.
        // With repeated ACK records, a lost ACK is made good by the ACK of the next packet
        // the connection sends: one more packet time at the paced rate.
        uint64_t packets = uint64_t(TotalInflight()) + (m_repeatedAcks ? 1 : 0);
        Time drain = TransmissionTime(packets * (m_cfg.mtu + WIRE_OVERHEAD_BYTES), PacingRate());
        rto = std::min(std::max(rto, path.rtt.Min() + drain), std::max(rto, m_cfg.rtoMax));
    }
    path.jitterState += 0x9E3779B97F4A7C15ull;
    uint64_t z = path.jitterState;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    Time jitter = rto >= 4 ? Time(z % uint64_t(rto / 4)) : 0;
    // A software host may act on a packet late (Endpoint::SetHostDelay): added outside the
    // drain bound and the jitter, which are about the network, and at most a quarter of the
    // connection timeout, which must still leave room for retransmissions.
    Time hostDelay = std::min(HostDelay(), m_cfg.connectionTimeout / 4);
    m_timers.Set(path.id, RequesterPathTimer::RTO, now + rto + jitter + hostDelay);
}

void
MultipathRequester::UpdateRtt(Time now, PathState& path, Time sample)
{
    Time floor = m_cfg.rtoMin;
    if (m_adaptiveRto)
    {
        // The floor follows the path's measured minimum RTT, not a fixed 100 us.
        Time minRtt = path.rtt.HasSample() ? std::min(path.rtt.Min(), sample) : sample;
        floor = std::max(m_cfg.rtoFloor, Time(double(minRtt) * m_cfg.rtoMinRttFactor));
    }
    path.rtt.AddSample(sample, floor, std::max(floor, m_cfg.rtoMax));
    m_minRtt = m_minRtt == 0 ? path.rtt.Min() : std::min(m_minRtt, path.rtt.Min());
    // The largest sample of the last one to two epochs of tailRttEpochRtts minimum RTTs.
    if (now - m_rttMaxEpoch >= Time(double(m_minRtt) * m_cfg.tailRttEpochRtts))
    {
        m_rttMax[1] = m_rttMax[0];
        m_rttMax[0] = -1;
        m_rttMaxEpoch = now;
    }
    m_rttMax[0] = std::max(m_rttMax[0], sample);
    m_lastSrtt = path.rtt.Smoothed();
    m_ep.lastSrtt = m_lastSrtt;
    NotifyPath(now, PathEvent::RTT, path);
}

void
MultipathRequester::NoteProgress(Time now)
{
    m_progressTime = now;
    ++m_progressCount; // older timeout counts no longer spend the retry budget
    SyncConnectionTimer();
}

void
MultipathRequester::SyncConnectionTimer()
{
    m_timers.Set(RequesterTimer::CONNECTION,
                 m_outstanding > 0 ? m_progressTime + m_cfg.connectionTimeout : TIME_INFINITE);
}

void
MultipathRequester::RetireEpoch(PathState& path)
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
MultipathRequester::HandleRetiredAck(Time now, PathState& path, const Mah& ack)
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
        UpdateRtt(now, path, rttSample);
    }
    if (newlyAcked > 0)
    {
        NoteProgress(now);
    }
}

void
MultipathRequester::HandleNak(Time now, const Mnh& nak)
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
    const uint32_t packetIndex = nak.offset / m_cfg.mtu;
    if (packetIndex >= m.numPackets || !PacketWanted(slot, m.generation, packetIndex))
    {
        // Stale (another copy of the packet was placed since: the receive is there) or not
        // one of the message's packets. A wait started now would never end: only an
        // acknowledged packet that names a receive ends one, and the message may have none
        // left in flight.
        return;
    }
    m_progressTime = now;
    SyncConnectionTimer();
    Stream& s = m_streams[nak.streamId];
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
        SyncRnrTimer();
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
        SyncPathIndex(path);
    }
    e.messageSlot = NONE; // resent as a NOP
    m_rnrParked.push_back(
        Resend{slot, m.generation, packetIndex, true, e.timeouts, e.progressStamp});
}

bool
MultipathRequester::RnrHeld(uint32_t slot, uint32_t packetIndex) const
{
    const SendMessage& m = m_messages[slot];
    const Stream& s = GetStream(m.wr.streamId);
    return s.rnrHold && PacketConsumesRecv(m.wr.opcode, packetIndex, m.numPackets) &&
           int32_t(m.recvSlot - s.rnrSlot) >= 0;
}

void
MultipathRequester::ReleaseRnr(uint16_t streamId)
{
    Stream& s = m_streams[streamId];
    s.rnrHold = false;
    s.rnrProbeOut = false;
    --m_rnrHeldStreams;
    SyncRnrTimer();
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
MultipathRequester::AskAfterRnr(Time now)
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
    SyncRnrTimer();
}

void
MultipathRequester::SyncRnrTimer()
{
    // (Runs only when an RNR wait starts, ends or asks: a pass over the streams is cheap.)
    Time earliest = TIME_INFINITE;
    if (m_rnrHeldStreams > 0)
    {
        for (const Stream& s : m_streams)
        {
            if (s.rnrHold)
            {
                earliest = std::min(earliest, s.rnrProbeAt); // always moved ahead when reached
            }
        }
    }
    m_timers.Set(RequesterTimer::RNR, earliest);
}

void
MultipathRequester::ResetPathSequence(PathState& path)
{
    PathIndexSync sync(*this, path);
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
    m_timers.Clear(path.id, RequesterPathTimer::LOSS);
    path.lossAwaitsEvidence = false;
    path.lossSuspected = false;
    path.confirmOut = false;
    path.confirmProbes = 0;
    path.silentLosses = 0;
}

uint16_t
MultipathRequester::FreshSourcePort()
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

bool
MultipathRequester::MoveOutstanding(Time now, PathState& path, bool timeout)
{
    // Everything outstanding on the path goes to the other paths; the path restarts its
    // PSN space in a new epoch so the responder's cumulative PSN never waits for them.
    // IB's retry_cnt, per packet: the timeouts a packet went through with no data of the
    // connection acknowledged since. Probe replies do not refresh it, so a packet that can
    // never be delivered ends the connection even while the paths answer probes. A path
    // taken out on evidence from the other paths is not a timeout: they make progress.
    for (uint32_t psn = path.ackedPsn; psn != path.nextPsn; psn = PsnAdd(psn, 1))
    {
        const InflightEntry& e = path.Entry(psn);
        if ((e.state == InflightEntry::INFLIGHT || e.state == InflightEntry::LOST) &&
            PacketWanted(e.messageSlot, e.generation, e.packetIndex))
        {
            uint32_t timeouts = (e.progressStamp == m_progressCount ? e.timeouts : 0) + timeout;
            if (timeouts > m_cfg.retryLimit)
            {
                // As in IB, the error goes to the oldest unfinished message of the stream
                // (completions are in stream order); the later ones are flushed.
                EnterError(now,
                           GetStream(m_messages[e.messageSlot].wr.streamId).head,
                           WcStatus::RETRY_EXC_ERR);
                return false;
            }
            m_resends.push_back(Resend{e.messageSlot,
                                       e.generation,
                                       e.packetIndex,
                                       false,
                                       uint8_t(timeouts),
                                       m_progressCount});
        }
    }
    RetireEpoch(path);
    ResetPathSequence(path);
    return true;
}

void
MultipathRequester::SuspectPath(Time now, PathState& path)
{
    PathIndexSync sync(*this, path);
    // Packets sent later on other paths arrived while this path stayed silent: failure, not
    // congestion (congestion shows as ECN marks and a rising RTT while ACKs still flow). Its
    // packets move at once; a probe asks whether it still works, and an unanswered probe
    // times out like data, so the RTO remains the backstop.
    Count(Counter::PATH_SUSPECT);
    if (!MoveOutstanding(now, path, false))
    {
        return;
    }
    m_timers.Clear(path.id, RequesterPathTimer::RTO);
    path.status = PathStatus::SUSPECT;
    NotifyPath(now, PathEvent::SUSPECT, path);
    m_probeNow.Insert(path.id);
    ArmRto(path, now);
}

LossContext
MultipathRequester::MakeLossContext(Time now) const
{
    return LossContext{m_cfg,
                       now,
                       m_minRtt,
                       FallbackRtt(),
                       m_latestDeliveredSent,
                       m_reorderMultiplier,
                       AtTail(),
                       std::max(m_rttMax[0], m_rttMax[1])};
}

void
MultipathRequester::DetectLosses(Time now, PathState& path, bool confirmed)
{
    PathIndexSync sync(*this, path);
    m_lostScratch.clear();
    const LossContext ctx = MakeLossContext(now);
    Time again = m_loss->DetectLosses(path, ctx, m_lostScratch);
    if (path.confirmOut && path.confirmProbes > 0 && !confirmed)
    {
        // A confirmation probe unanswered for a round trip plus the reordering window was
        // lost, or its reply was, or the path no longer delivers: ask once more, then take
        // the path for failed while the other paths deliver what was sent after its packets.
        Time wait = ConfirmationWait(path, ctx);
        Time due = wait < 0 ? TIME_INFINITE : path.confirmSent + wait;
        if (due > now)
        {
            again = std::min(again, due);
        }
        else if (path.confirmProbes < m_cfg.suspectLosses)
        {
            path.confirmSent = now; // (the probe goes out next: probes come before data)
            m_probeNow.Insert(path.id);
            again = std::min(again, now + wait);
        }
        else if (m_crossPathFailure && path.Usable())
        {
            m_timers.Set(path.id, RequesterPathTimer::LOSS, TIME_INFINITE);
            SuspectPath(now, path);
            return;
        }
    }
    m_timers.Set(path.id, RequesterPathTimer::LOSS, again);
    if (confirmed)
    {
        // The reply to the path's confirmation probe: whatever the path sent before the probe
        // and the reply does not acknowledge is lost (the path delivers in order).
        // (A packet resent on its PSN after the first probe left is not judged by the reply.)
        for (uint32_t psn = path.ackedPsn; PsnDiff(psn, path.confirmPsn) < 0; psn = PsnAdd(psn, 1))
        {
            const InflightEntry& e = path.Entry(psn);
            if (e.state == InflightEntry::INFLIGHT && e.sentTime < path.confirmFirst &&
                std::find(m_lostScratch.begin(), m_lostScratch.end(), psn) == m_lostScratch.end())
            {
                m_lostScratch.push_back(psn);
            }
        }
    }
    for (uint32_t psn : m_lostScratch)
    {
        InflightEntry& e = path.Entry(psn);
        e.state = InflightEntry::LOST;
        --path.inflight;
        path.lostPsns.push_back(psn);
        Count(Counter::LOSS_DETECTED);
        if (path.lastAck < e.sentTime)
        {
            ++path.silentLosses; // declared by time, with no ACK of the path since it left
        }
    }
    if (path.lossSuspected && !path.confirmOut && path.status == PathStatus::ACTIVE)
    {
        // "rack-confirm": a packet is overdue and a later-sent one arrived; ask the path.
        path.confirmOut = true;
        m_probeNow.Insert(path.id);
    }
    if (!m_lostScratch.empty())
    {
        // RFC 8985: the window returns to its base after 16 loss detections without a
        // duplicate (reordering that stopped).
        if (++m_lossEpisodes >= 16)
        {
            m_reorderMultiplier = 1;
            m_lossEpisodes = 0;
        }
        m_cc[path.id]->OnLoss(path, now, m_cfg);
        NotifyPath(now, PathEvent::LOSS, path);
        if (m_crossPathFailure && path.silentLosses >= m_cfg.suspectLosses && path.Usable())
        {
            SuspectPath(now, path);
        }
    }
}

void
MultipathRequester::ArmTailProbe(Time now)
{
    // RFC 8985's probe timeout: tailProbeRtts smoothed RTTs, plus the receiver's ACK delay
    // when a single packet is out (its ACK may be held back).
    uint32_t inflight = TotalInflight();
    Time srtt = FallbackRtt();
    if (srtt < 0 || inflight == 0)
    {
        m_timers.Clear(RequesterTimer::TAIL_PROBE);
        return;
    }
    Time pto = Time(double(srtt) * m_cfg.tailProbeRtts);
    if (inflight == 1)
    {
        pto += m_cfg.ackDelay;
    }
    m_timers.Set(RequesterTimer::TAIL_PROBE, now + pto);
}

void
MultipathRequester::SendTailProbe()
{
    m_timers.Clear(RequesterTimer::TAIL_PROBE);
    if (m_outstanding == 0 || m_tailProbeOut || HasNewData() || HasResendReady())
    {
        return; // more is to be sent: those packets reveal a lost tail
    }
    // The newest packet still in flight, resent on whichever path the scheduler picks. Its
    // ACK, or the SACK gap and later-sent evidence it creates, reveals what the tail lost.
    const InflightEntry* newest = nullptr;
    for (PathState& p : m_paths)
    {
        for (uint32_t psn = p.nextPsn; psn != p.ackedPsn;)
        {
            psn = PsnAdd(psn, -1);
            const InflightEntry& e = p.Entry(psn);
            if (e.state == InflightEntry::INFLIGHT &&
                PacketWanted(e.messageSlot, e.generation, e.packetIndex))
            {
                if (newest == nullptr || e.sentTime > newest->sentTime)
                {
                    newest = &e;
                }
                break;
            }
        }
    }
    if (newest == nullptr)
    {
        return;
    }
    m_resends.push_back(Resend{newest->messageSlot,
                               newest->generation,
                               newest->packetIndex,
                               false,
                               newest->timeouts,
                               newest->progressStamp});
    m_tailProbeOut = true;
    Count(Counter::TAIL_PROBE);
}

void
MultipathRequester::OnRto(Time now, PathState& path)
{
    PathIndexSync sync(*this, path);
    Count(Counter::RTO);
    ++path.timeouts;
    ++path.consecutiveRtos;
    if (m_tailProbeAfterRto)
    {
        // A new episode: the resends this timeout brings about may be probed in turn, so a
        // packet lost again at the tail costs a probe timeout, not another RTO.
        m_tailProbeOut = false;
    }
    if (!MoveOutstanding(now, path, true))
    {
        return;
    }
    if (path.status == PathStatus::ACTIVE)
    {
        m_cc[path.id]->OnTimeout(path, m_cfg);
    }
    path.rtt.Backoff(m_cfg.rtoMax);
    m_timers.Clear(path.id, RequesterPathTimer::RTO);
    NotifyPath(now, PathEvent::TIMEOUT, path);
    if (path.consecutiveRtos >= m_cfg.failureThreshold)
    {
        FailPath(now, path);
        return;
    }
    // Silence, not congestion: carry no data on the path, ask it with a probe whether it
    // still works; an unanswered probe times out like data. (A PROBE deadline is armed only
    // while the path is FAILED: NextDeadline counts every armed slot.)
    path.status = PathStatus::SUSPECT;
    m_timers.Clear(path.id, RequesterPathTimer::PROBE);
    m_probeNow.Insert(path.id);
    ArmRto(path, now);
}

Time
MultipathRequester::ConfirmationDue(const PathState& path, Time now) const
{
    if (!path.confirmOut || path.confirmProbes == 0 || path.status != PathStatus::ACTIVE)
    {
        return -1;
    }
    Time wait = ConfirmationWait(path, MakeLossContext(now));
    return wait < 0 ? -1 : path.confirmSent + wait;
}

Time
MultipathRequester::ConfirmationWait(const PathState& path, const LossContext& ctx) const
{
    // A probe is asked again after a round trip plus the reordering window; the last one,
    // whose silence takes the path out, waits at least the path's RTO, as a queue that grew
    // since the path's last RTT sample delays its reply as much as it delays data.
    Time wait = m_loss->OverdueAfter(path, ctx);
    if (wait >= 0 && path.confirmProbes >= m_cfg.suspectLosses)
    {
        wait = std::max(wait, path.rtt.Rto());
    }
    return wait;
}

bool
MultipathRequester::QueuedNotLost(const PathState& path, Time now) const
{
    // The connection acknowledged data within the last RTO, but only packets sent before the
    // path's oldest outstanding one: the network delivers in send order, late, as from behind
    // an incast queue. Were the path's packets lost, packets sent after them on the other
    // paths would arrive first (and time-based loss detection would act on them). A path with
    // no packet out (a probe) or a connection without recent progress times out as usual.
    if (path.status != PathStatus::ACTIVE || path.inflight == 0 ||
        now - m_progressTime >= path.rtt.Rto())
    {
        return false;
    }
    for (uint32_t psn = path.ackedPsn; psn != path.nextPsn; psn = PsnAdd(psn, 1))
    {
        const InflightEntry& e = path.Entry(psn);
        if (e.state == InflightEntry::INFLIGHT)
        {
            return m_latestDeliveredSent < e.sentTime;
        }
    }
    return false;
}

Time
MultipathRequester::ProbeInterval()
{
    // Uniform in [0.5, 1.5) x probeInterval: a path that flaps with a period dividing the
    // interval is not probed only while it is down.
    Time base = m_cfg.probeInterval;
    return base / 2 + Time(m_ep.rng.Below(uint64_t(base)));
}

void
MultipathRequester::FailPath(Time now, PathState& path)
{
    PathIndexSync sync(*this, path);
    path.status = PathStatus::FAILED;
    path.sourcePort = FreshSourcePort(); // steer the path onto another route
    m_timers.Set(path.id, RequesterPathTimer::PROBE, now);
    Count(Counter::PATH_FAILED);
    NotifyPath(now, PathEvent::FAILED, path);
}

Time
MultipathRequester::NextDeadline(Time lastNow) const
{
    // Every armed timer is in the table, which keeps the earliest: no pass over the paths.
    Time t = m_timers.Earliest();
    // (PSNs a SACK gap declared lost wait for the release too: with nothing else to send,
    // they would otherwise wait for the next ACK, or the RTO at a connection's tail.)
    bool dataPending = HasNewData() || HasResendReady() || PathWithPendingLoss() >= 0;
    if (PacingRate() > 0 && dataPending && !m_pacer.MayTransmit(lastNow))
    {
        t = std::min(t, m_pacer.NextRelease()); // pacing release: a condition, so only if ahead
    }
    return t;
}

void
MultipathRequester::HandleTimeout(Time now)
{
    if (m_rnrHeldStreams > 0)
    {
        AskAfterRnr(now);
    }
    if (m_timers.Get(RequesterTimer::CONNECTION) <= now)
    {
        EnterError(now, NONE, WcStatus::RETRY_EXC_ERR);
        return;
    }
    // Paths act only on their own due timers: with none due (say, at a pacing release), the
    // pass over the paths is skipped.
    if (m_timers.Earliest() <= now)
    {
        for (PathState& p : m_paths)
        {
            HandlePathTimeout(now, p);
        }
    }
    if (m_timers.Get(RequesterTimer::TAIL_PROBE) <= now)
    {
        SendTailProbe();
    }
}

void
MultipathRequester::HandlePathTimeout(Time now, PathState& p)
{
    if (m_timers.Get(p.id, RequesterPathTimer::LOSS) <= now)
    {
        DetectLosses(now, p);
    }
    if (m_timers.Get(p.id, RequesterPathTimer::RTO) <= now)
    {
        Time confirmDue = ConfirmationDue(p, now);
        if (confirmDue > now)
        {
            // A confirmation probe is out: its reply, due within a round trip, says what was
            // lost; an unanswered one is asked again or takes the path out (DetectLosses).
            m_timers.Set(p.id, RequesterPathTimer::RTO, confirmDue);
        }
        else if (m_adaptiveRto && QueuedNotLost(p, now))
        {
            ArmRto(p, now); // no back-off: nothing says the path lost anything
        }
        else
        {
            OnRto(now, p);
        }
    }
    if (p.status == PathStatus::FAILED && m_timers.Get(p.id, RequesterPathTimer::PROBE) <= now)
    {
        m_probeNow.Insert(p.id);
        m_timers.Set(p.id, RequesterPathTimer::PROBE, now + ProbeInterval());
    }
}

} // namespace metaroce
