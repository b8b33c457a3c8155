/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The ACK side of the MetaRoCE requester: applying per-path and coalesced ACKs (with their
// repeated records), crediting what they acknowledge, and the loss detection and RTO re-arm
// that follow. Wire formats: docs/wire-format.md.

#include "metaroce-multipath-connection.h"
#include "metaroce-multipath-requester.h"

#include <algorithm>

namespace metaroce
{

namespace
{

/**
 * Call \p visit(psn) for each PSN the SACK bitmap of \p ack reports for \p path at or after
 * its cumulative PSN, in order, until \p visit returns true; a bit past the path's next PSN
 * ends the walk (the rest would name PSNs never sent).
 * \return true if \p visit returned true
 */
template <typename Visit>
bool
ForEachSacked(const PathState& path, const Mah& ack, Visit visit)
{
    for (uint32_t w = 0; w < 4; ++w)
    {
        for (uint64_t bits = ack.sack[w]; bits; bits &= bits - 1)
        {
            uint32_t psn = PsnAdd(ack.cumulativePsn, 1 + w * 64 + uint32_t(__builtin_ctzll(bits)));
            if (PsnDiff(psn, path.nextPsn) >= 0)
            {
                return false;
            }
            if (PsnDiff(psn, path.ackedPsn) >= 0 && visit(psn))
            {
                return true;
            }
        }
    }
    return false;
}

} // namespace

void
MultipathRequester::AckEntry(PathState& path,
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
    // The latest send time of a delivered packet: evidence across paths. A retransmitted
    // packet acknowledged sooner than a minimum RTT after its last transmission was
    // acknowledged for an earlier copy: its send time proves nothing. (An eighth of the
    // minimum is tolerance: round trips differ by the size of the ACK that closes them.)
    if (e.sentTime > m_latestDeliveredSent &&
        (!e.retransmitted || (m_minRtt > 0 && now - e.sentTime >= m_minRtt - m_minRtt / 8)))
    {
        m_latestDeliveredSent = e.sentTime;
        m_newEvidence = true;
    }
    CreditPacket(e.messageSlot, e.generation, e.packetIndex);
}

void
MultipathRequester::HandleAck(Time now, const Mah& ack)
{
    EnsurePaths();
    if (ack.pathId >= m_paths.size())
    {
        Count(Counter::RX_INVALID);
        return;
    }
    Count(Counter::RX_ACK);
    m_newEvidence = false;
    m_ackFoundCapFull = TotalInflight() >= uint32_t(m_cfg.connectionWindow);
    AckProgress done;
    if (!ApplyAck(now, ack, 0, done))
    {
        return;
    }
    FinishAck(now, done);
    if (m_newEvidence)
    {
        PathSet acked;
        acked.Insert(done.path->id);
        DetectLossesElsewhere(now, acked);
    }
    if (m_tailProbe && done.newlyAcked > 0)
    {
        m_tailProbeOut = false;
        ArmTailProbe(now);
    }
}

void
MultipathRequester::HandleCoalescedAck(Time now, const ParsedPacket& pkt)
{
    // The whole ACK is checked before any record is applied: a malformed one changes nothing.
    EnsurePaths();
    m_ackRecords.resize(pkt.mch.recordCount);
    size_t at = 0;
    for (AckRecord& r : m_ackRecords)
    {
        size_t n = AckRecord::Read(pkt.payload + at, pkt.payloadLength - at, r);
        if (n == 0 || r.mah.pathId >= m_paths.size())
        {
            Count(Counter::RX_INVALID);
            return;
        }
        r.mah.rateHint = pkt.mch.rateHint;
        at += n;
    }
    if (at != pkt.payloadLength || m_ackRecords.empty())
    {
        Count(Counter::RX_INVALID);
        return;
    }
    Count(Counter::RX_ACK);
    // Every record first, then loss detection: a packet acknowledged by a later record of
    // the same ACK is not declared lost on the evidence of an earlier one.
    m_newEvidence = false;
    // (Before any record: each record's path gives up what it acknowledged.)
    m_ackFoundCapFull = TotalInflight() >= uint32_t(m_cfg.connectionWindow);
    m_ackProgress.clear();
    for (const AckRecord& r : m_ackRecords)
    {
        AckProgress done;
        if (ApplyAck(now, r.mah, NanoSeconds(int64_t(r.delay) * AckRecord::DELAY_UNIT_NS), done))
        {
            m_ackProgress.push_back(done);
        }
    }
    PathSet acked;
    uint32_t newlyAcked = 0;
    for (const AckProgress& done : m_ackProgress)
    {
        FinishAck(now, done);
        acked.Insert(done.path->id);
        newlyAcked += done.newlyAcked;
    }
    if (m_newEvidence)
    {
        DetectLossesElsewhere(now, acked);
    }
    if (m_tailProbe && newlyAcked > 0)
    {
        m_tailProbeOut = false;
        ArmTailProbe(now);
    }
}

bool
MultipathRequester::ApplyAck(Time now, const Mah& ack, Time held, AckProgress& done)
{
    PathState& path = m_paths[ack.pathId];
    PathIndexSync sync(*this, path);
    const bool repeat = (ack.flags & Mah::FLAG_REPEAT) != 0;
    if (repeat && !AcksOutstanding(path, ack))
    {
        return false; // (a copy of what an earlier ACK said: it changes nothing)
    }
    RateHintFollower::Change change = m_rateHint.OnAck(ack.rateHint);
    if (change != RateHintFollower::Change::NONE)
    {
        if (change == RateHintFollower::Change::DECREASE)
        {
            Count(Counter::WINDOW_DECREASE);
        }
        if (m_ep.observer)
        {
            m_ep.observer->OnRateChange(now, Qpn(), PacingRate());
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
        return false;
    }
    if (PsnDiff(ack.cumulativePsn, path.nextPsn) > 0)
    {
        Count(Counter::RX_INVALID); // acknowledges PSNs never sent
        return false;
    }
    if ((ack.flags & Mah::FLAG_DUPLICATE) && m_timeLoss &&
        (m_lastReorderGrowth < 0 || now - m_lastReorderGrowth >= std::max<Time>(FallbackRtt(), 0)))
    {
        // A packet arrived twice: a resend was spurious, or reordering exceeded the window.
        // Widen the time-based window by one base window per round trip of such reports.
        m_reorderMultiplier = std::min<uint32_t>(m_reorderMultiplier + 1, 64);
        m_lossEpisodes = 0;
        m_lastReorderGrowth = now;
    }
    path.lastAck = now;
    path.consecutiveRtos = 0;
    path.silentLosses = 0;
    m_anyAck = true;
    if (path.status != PathStatus::ACTIVE)
    {
        // A probe reply (or any ACK of the new epoch): the path works again. The RTO keeps
        // its back-off until an RTT sample is taken (RFC 6298, 5.7): a round trip above the
        // RTO must not time out again at once.
        bool failed = path.status == PathStatus::FAILED;
        path.status = PathStatus::ACTIVE;
        path.cwnd =
            std::max(path.cwnd, failed && m_returnShare ? ShareWindow(path) : m_initialPathWindow);
        m_timers.Clear(path.id, RequesterPathTimer::PROBE);
        m_timers.Clear(path.id, RequesterPathTimer::RTO);
        if (failed)
        {
            Count(Counter::PATH_RECOVERED);
        }
        NotifyPath(now, PathEvent::RECOVERED, path);
    }
    // The reply to one of the probes of the path's current confirmation (their serials are
    // the last confirmProbes ones).
    const bool confirmReply =
        (ack.flags & Mah::FLAG_PROBE_REPLY) && path.confirmOut && path.confirmProbes > 0 &&
        path.status == PathStatus::ACTIVE &&
        uint32_t(PsnDiff(path.confirmSerial, ack.triggerPsn)) < path.confirmProbes;
    const bool probeReply = (ack.flags & Mah::FLAG_PROBE_REPLY) != 0;
    if (probeReply && !confirmReply)
    {
        // One probe in this epoch: its reply is an unambiguous RTT sample (Karn). A reply is
        // not progress: it says the path works, not that data gets through.
        if (path.probesInEpoch == 1 && path.probeSentTime >= 0)
        {
            UpdateRtt(now, path, now - path.probeSentTime);
        }
        // Unless it acknowledges data: a late reply to a confirmation already answered (or
        // to an earlier one) carries the path's state, with the ACK of data that arrived
        // since merged into it by the responder. At a connection's tail nothing else would
        // acknowledge that data before the next confirmation, an RTO later.
        if (!AcksOutstanding(path, ack))
        {
            return false;
        }
    }
    // (Before this ACK takes its packets out of flight: did the window limit the path?)
    const bool windowLimited = 2.0 * path.inflight >= path.cwnd;
    uint32_t newlyAcked = 0;
    Time rttSample = -1;
    // A probe's reply samples the path's round trip with the probe (a confirmation's, below),
    // not with a data packet whose own ACK may have been lost: its TriggerPsn is the
    // probe's serial.
    const uint32_t triggerPsn = probeReply ? PathState::NO_REPEAT : ack.triggerPsn;
    if (PsnDiff(ack.cumulativePsn, path.ackedPsn) > 0)
    {
        for (uint32_t psn = path.ackedPsn; psn != ack.cumulativePsn; psn = PsnAdd(psn, 1))
        {
            AckEntry(path, psn, now, triggerPsn, newlyAcked, rttSample);
            path.Entry(psn).state = InflightEntry::FREE;
        }
        path.ackedPsn = ack.cumulativePsn;
    }
    ForEachSacked(path, ack, [&](uint32_t psn) {
        AckEntry(path, psn, now, triggerPsn, newlyAcked, rttSample);
        return false;
    });
    if (confirmReply)
    {
        // With one probe out, its reply is an RTT sample of the path as it is now (Karn).
        rttSample = path.confirmProbes == 1 ? now - path.confirmSent : -1;
        held = 0;
        done.confirmed = true;
    }
    if (rttSample >= 0)
    {
        // A held ACK's sample loses the holding time if what remains is still at least the
        // connection's minimum RTT (RFC 9002, 5.3, with the minimum over all paths, so that a
        // path's first sample is corrected too).
        if (held > 0 && rttSample - held >= std::max<Time>(m_minRtt, 1))
        {
            rttSample -= held;
        }
        UpdateRtt(now, path, rttSample);
    }
    if (newlyAcked > 0)
    {
        NoteProgress(now);
    }
    AckEvent ev;
    ev.now = now;
    ev.newlyAcked = newlyAcked;
    ev.ceCount = ack.ceCount;
    ev.ece = (ack.flags & Mah::FLAG_ECE) != 0;
    ev.minRtt = m_minRtt;
    ev.connectionLimited = m_ackFoundCapFull;
    ev.windowLimited = windowLimited;
    if (repeat)
    {
        path.repeatedTrigger = ack.triggerPsn; // (it acknowledged packets: see AcksOutstanding)
    }
    else if (path.repeatedTrigger != PathState::NO_REPEAT)
    {
        if (newlyAcked == 0 && ack.triggerPsn == path.repeatedTrigger)
        {
            // The original of a repeated record that overtook it: its marks were echoed.
            ev.ceCount = 0;
            ev.ece = false;
        }
        path.repeatedTrigger = PathState::NO_REPEAT;
    }
    if (ev.ece)
    {
        path.lastEcn = now;
        path.ecnEchoes += ack.ceCount;
        Count(Counter::ECN_ECHO_RECEIVED);
    }
    done.path = &path;
    done.newlyAcked = newlyAcked;
    done.cwndBefore = path.cwnd;
    if (m_cc[path.id]->OnAck(path, ev, m_cfg))
    {
        Count(Counter::WINDOW_DECREASE);
    }
    return true;
}

bool
MultipathRequester::AcksOutstanding(const PathState& path, const Mah& ack) const
{
    if (ack.pathEpoch != path.epoch || PsnDiff(ack.cumulativePsn, path.nextPsn) > 0)
    {
        return false; // (an older epoch's state, or nonsense: ignored without a count)
    }
    if (PsnDiff(ack.cumulativePsn, path.ackedPsn) > 0)
    {
        return true;
    }
    return ForEachSacked(path, ack, [&path](uint32_t psn) {
        InflightEntry::State state = path.Entry(psn).state;
        return state == InflightEntry::INFLIGHT || state == InflightEntry::LOST;
    });
}

void
MultipathRequester::FinishAck(Time now, const AckProgress& done)
{
    PathState& path = *done.path;
    if (done.confirmed)
    {
        path.confirmOut = false; // (before DetectLosses, which may ask the path again)
        path.confirmProbes = 0;
    }
    DetectLosses(now, path, done.confirmed);
    if (path.cwnd != done.cwndBefore)
    {
        NotifyPath(now, PathEvent::WINDOW, path);
    }
    if (path.status == PathStatus::ACTIVE) // (not taken out by DetectLosses)
    {
        m_timers.Clear(path.id, RequesterPathTimer::RTO);
        if (path.inflight > 0 || !path.lostPsns.empty())
        {
            ArmRto(path, now);
        }
    }
}

void
MultipathRequester::DetectLossesElsewhere(Time now, const PathSet& acked)
{
    // A later-sent packet arrived: overdue packets of the other paths are lost now. A rule
    // that does not judge by time now (SACK gaps need an ACK of the path itself) has nothing
    // to find there: no pass over the paths.
    if (!m_loss->TimeRuleApplies(AtTail()))
    {
        return;
    }
    for (PathState& other : m_paths)
    {
        // (a path with packets out and no deadline sent them before any RTT was known)
        bool unexamined = !m_timers.Armed(other.id, RequesterPathTimer::LOSS) && other.inflight > 0;
        if ((other.lossAwaitsEvidence || unexamined) && !acked.Contains(other.id) && other.Usable())
        {
            DetectLosses(now, other);
        }
    }
}

} // namespace metaroce
