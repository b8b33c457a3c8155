/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_MULTIPATH_REQUESTER_H
#define METAROCE_MULTIPATH_REQUESTER_H

#include "metaroce-congestion-control.h"
#include "metaroce-loss-detection.h"
#include "metaroce-multipath-role.h"
#include "metaroce-pacer.h"
#include "metaroce-path-scheduler.h"
#include "metaroce-ring-queue.h"
#include "metaroce-timer-table.h"
#include "metaroce-transport.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace metaroce
{

/// \return the number of packets of \p length bytes at \p mtu (at least one).
inline uint32_t
PacketsFor(uint32_t length, uint32_t mtu)
{
    return std::max<uint32_t>(1, (length + mtu - 1) / mtu);
}

/// \return true if \p op consumes a posted receive at the responder.
inline bool
ConsumesRecv(WrOpcode op)
{
    return op == WrOpcode::SEND || op == WrOpcode::SEND_WITH_IMM ||
           op == WrOpcode::RDMA_WRITE_WITH_IMM;
}

/// \return true if packet \p packetIndex of \p numPackets of an \p op message names the
/// receive it consumes: every packet of a SEND, only the last of a WRITE with immediate
/// (the others are plain WRITE packets, placed without a receive).
inline bool
PacketConsumesRecv(WrOpcode op, uint32_t packetIndex, uint32_t numPackets)
{
    return op == WrOpcode::RDMA_WRITE_WITH_IMM ? packetIndex + 1 >= numPackets : ConsumesRecv(op);
}

/**
 * The requester role of a MetaRoCE connection (Linux rxe's requester and completer):
 * work requests are cut into MTU packets that are sprayed over paths with open windows; each
 * path has its own PSN space, window, RTT estimate and UDP source port. A gap in a path's
 * SACK bitmap is loss and exactly the missing PSN is resent on that path; a per-path RTO
 * moves the path's outstanding packets to the other paths and resets its PSN space (a new
 * epoch); failureThreshold RTOs in a row without an ACK fail the path, which is then probed
 * on a new source port until it answers. A message completes when every packet is
 * acknowledged; completions are reported in post order per stream.
 *
 * metaroce-multipath-requester.cc holds posting, transmission and acknowledgement;
 * metaroce-multipath-recovery.cc holds the timers, path health and RNR waits;
 * metaroce-multipath-read-atomic.cc holds READ and atomic requests and answers.
 */
class MultipathRequester : public MultipathRole
{
  public:
    /// Marks "no message slot".
    static constexpr uint32_t NONE = 0xFFFFFFFF;
    /// First UDP source port handed out (the dynamic range, RFC 6335).
    static constexpr uint16_t EPHEMERAL_PORT_BASE = 49152;

    /// Create the requester of \p conn (whose configuration is already validated).
    explicit MultipathRequester(MultipathConnection& conn);

    /// Post a send work request (keys already checked by the endpoint).
    PostStatus PostSend(Time now, const SendWr& wr);
    /// Process an ACK of one path (MR_ACK).
    void HandleAck(Time now, const Mah& ack);
    /// Process a coalesced ACK (MR_ACK_COALESCED): every record, then loss detection.
    void HandleCoalescedAck(Time now, const ParsedPacket& pkt);
    /// Process a NAK.
    void HandleNak(Time now, const Mnh& nak);

    /**
     * Queue the answer to the READ or atomic request \p pkt, which the responder accepted
     * (atomics: already executed, \p original is the value found). The answer is sent like
     * data, sprayed over this end's paths, and kept until the peer acknowledges it.
     * \return false if 2 x maxRdAtomic answers are held already (the request is left
     * unacknowledged, so it comes again)
     */
    bool QueueResponse(Time now, const ParsedPacket& pkt, uint64_t original);

    /// \return true if QueueResponse has room for one more answer.
    bool ResponseRoom() const
    {
        return m_responsesHeld < 2 * m_cfg.maxRdAtomic;
    }

    /**
     * \param now the current time
     * \return the paths a packet may go on now: those with room (m_hasRoom), less the paths
     *         awaiting a confirmation and silent for a round trip while another path has
     *         room (confirmHold "hold")
     */
    PathSet SendablePaths(Time now) const;

    /**
     * Place a READ response or atomic response packet \p pkt (which arrived on the
     * responder's path state) into the local buffer of the request it names.
     * \return 0 if it is to be acknowledged (\p duplicate: it was placed before, or answers
     * a request no longer outstanding), else a reason not to acknowledge it
     */
    uint8_t PlaceResponse(Time now, const ParsedPacket& pkt, bool& duplicate);

    /// \return true if a path probe is due.
    bool ProbeDue() const
    {
        return m_probeNow.Any();
    }

    /// Send the next due path probe. \return false if none could be written.
    bool SendDueProbe(Time now, TxDatagram& out);
    /// Send the next data packet if pacing and windows allow it. \return false if none.
    bool PollData(Time now, TxDatagram& out);
    /// \return true if a probe or a data packet may be sent at \p now.
    bool WantsToSend(Time now) const;
    /// \return the requester's next deadline; \p lastNow is the latest time seen.
    Time NextDeadline(Time lastNow) const;

    /**
     * Do not count \p late of host time against connectionTimeout (the host ran the engine
     * that much after the deadline it was given).
     */
    void ForgiveLateness(Time late)
    {
        m_progressTime += late;
        SyncConnectionTimer();
    }

    /// Process every requester deadline due at \p now.
    void HandleTimeout(Time now);
    /**
     * Complete every outstanding message of stream \p sid: \p failedSlot with \p status, the
     * others with WR_FLUSH_ERR.
     */
    void FlushStream(uint16_t sid, uint32_t failedSlot, WcStatus status);
    /**
     * \return the message a connection-wide error (no message named) completes with its
     * status: the first unfinished work request of the application, streams in id order, or
     * NONE if there is none. The connection's other work is flushed, so that it reports one
     * error, as a Verbs QP does.
     */
    uint32_t FirstUnfinishedWork() const;
    /// Stop every timer and queue after the connection entered the error state.
    void ClearAfterError();

    /// \return the number of streams with requester state.
    size_t StreamCount() const
    {
        return m_streams.size();
    }

    /// \return the number of paths.
    size_t PathCount() const
    {
        return m_cfg.numPaths;
    }

    /**
     * \return path \p i, or nullptr. Before the requester's first send or ACK (its paths
     * have no state yet) this is the record path \p i would start with, valid until the
     * next call.
     */
    const PathState* Path(size_t i) const;

    /**
     * Check the requester's derived state against what it is derived from (the path index
     * against every path). \return "" if it agrees, else what disagrees. For tests and
     * debugging: it is a pass over every path.
     */
    std::string CheckInvariants() const;

    /// \return the UDP source port of path \p i (i < PathCount()).
    uint16_t SourcePort(size_t i) const
    {
        return m_paths.empty() ? uint16_t(m_portBase + i) : m_paths[i].sourcePort;
    }

    /// \return the current pacing rate in b/s (0 = unpaced).
    double PacingRate() const
    {
        const double hint = m_rateHint.Rate();
        if (m_longPathPacing && m_minRtt >= m_cfg.slowStartMinRtt)
        {
            const double window = WindowPacingRate();
            return hint > 0 ? std::min(hint, window) : window;
        }
        return hint;
    }

    /// \return heap bytes held by the requester (beyond its own size).
    size_t HeapBytes() const;

  private:
    /// Requester state of one send work request.
    struct SendMessage
    {
        SendWr wr;                          //!< the work request (its SGE is checked per packet)
        uint32_t messageSeq{0};             //!< per-stream sequence number
        uint32_t recvSlot{0};               //!< receive slot (receive-consuming opcodes)
        uint32_t numPackets{0};             //!< packets in the message
        uint32_t nextPacket{0};             //!< next packet never sent
        uint32_t packetsAcked{0};           //!< packets acknowledged
        std::vector<uint64_t> acked;        //!< acknowledged-packet bitmap
        uint32_t generation{0};             //!< bumped when the slot is reused
        uint32_t nextInStream{NONE};        //!< next message of the same stream
        uint32_t rnrRetries{0};             //!< RNR retries of the message
        WcStatus status{WcStatus::SUCCESS}; //!< outcome
        bool finished{false};               //!< acknowledged or failed
        bool inUse{false};                  //!< slot holds a message
        // READ and atomics. A request is one packet; it finishes when its answer is placed.
        // An answer (response) is a message of its own in the internal response stream:
        // wr.remoteAddr/rkey/sge.length name the bytes read (atomics: original holds the
        // result); it completes silently once acknowledged.
        bool response{false};         //!< an answer to the peer's request
        bool rdAtomicIssued{false};   //!< request sent, counted against maxRdAtomic
        uint16_t answerStream{0};     //!< answer: the request's stream
        uint32_t answerSeq{0};        //!< answer: the request's message
        uint64_t original{0};         //!< atomic answer: the value found
        uint32_t responsePackets{0};  //!< request: answer packets expected
        uint32_t responsesPlaced{0};  //!< request: answer packets placed
        std::vector<uint64_t> placed; //!< READ request: placed-answer bitmap
    };

    /// A packet that must be resent on any path (with a new PSN).
    struct Resend
    {
        uint32_t slot;          //!< message slot
        uint32_t generation;    //!< slot generation
        uint32_t packetIndex;   //!< packet within the message
        bool rnr;               //!< let out by an RNR wait (not held by it)
        uint8_t timeouts;       //!< timeouts the packet went through since progressStamp
        uint32_t progressStamp; //!< the connection's progress count then
    };

    /// Requester state of one stream, created on first use of the stream id.
    struct Stream
    {
        uint32_t head{NONE};        //!< oldest outstanding message
        uint32_t tail{NONE};        //!< newest outstanding message
        uint32_t sendCursor{NONE};  //!< first message with unsent packets
        uint32_t nextMessageSeq{0}; //!< sequence number of the next posted message
        uint32_t nextRecvSlot{0};   //!< receive slot of the next receive-consuming message
        bool inSendRing{false};     //!< in m_sendStreams
        bool rdAtomicHold{false};   //!< next message (a READ/atomic) waits: room or order
        // RNR wait: the responder had no receive for slot rnrSlot; messages that consume
        // slot rnrSlot or later wait, and one packet at a time asks again.
        bool rnrHold{false};        //!< in an RNR wait
        bool rnrProbeOut{false};    //!< the asking packet is out
        uint32_t rnrSlot{0};        //!< first receive slot the responder lacked
        uint32_t rnrProbeSeq{0};    //!< message of the asking packet
        uint32_t rnrProbePacket{0}; //!< its packet index
        Time rnrProbeAt{0};         //!< when the next packet may ask (RNR timer: earliest)
    };

    // Per-path state, created on first use (metaroce-multipath-requester.cc)
    PathState FreshPath(uint32_t i) const;

    /// Create every path's state, congestion controller and timer slots, if not yet done.
    void EnsurePaths()
    {
        if (m_paths.empty())
        {
            CreatePaths();
        }
    }

    void CreatePaths();
    // Posting and transmission (metaroce-multipath-requester.cc)
    /// \return stream \p id (created on first use); id maxStreams is the answers' stream.
    Stream& GetStream(uint16_t id);

    /// \return stream \p id, which exists.
    const Stream& GetStream(uint16_t id) const
    {
        return id == m_cfg.maxStreams ? m_answers : m_streams[id];
    }

    /// \return true if the READ/atomic at \p slot must wait for earlier work of its stream.
    bool OrderedBehind(const Stream& s, uint32_t slot) const;
    /// Let every stream waiting in NextNewPacket for READ/atomic room or order try again.
    void ReleaseRdAtomicHolds();
    uint32_t AllocateSlot();
    /**
     * Put \p wr (\p numPackets packets) at the tail of its stream as a new message, ready to
     * be sent, with every per-message field reset. \return its slot
     */
    uint32_t EnqueueMessage(Time now, const SendWr& wr, uint32_t numPackets);
    bool SendData(Time now, TxDatagram& out);
    bool TransmitPacket(Time now,
                        TxDatagram& out,
                        PathState& path,
                        uint32_t psn,
                        uint32_t slot,
                        uint32_t packetIndex,
                        const Resend* resend);
    bool NextNewPacket(uint32_t& slot, uint32_t& packetIndex);
    bool PacketWanted(uint32_t slot, uint32_t generation, uint32_t packetIndex) const;
    bool HasNewData() const;
    bool HasResendReady() const;
    /// \return true if nothing new is to be sent and no resend is queued (the tail).
    bool AtTail() const;
    /// \return longPathPacingGain x the path windows' sum per smoothed RTT, in b/s.
    double WindowPacingRate() const;
    /// \return the window a returned path starts with under returnWindow "share".
    double ShareWindow(const PathState& path) const;

    /// \return the packets in flight on all paths (kept by SyncPathIndex: O(1)).
    uint32_t TotalInflight() const
    {
        VerifyPathIndex(true);
        return m_inflightTotal;
    }

    bool ConnectionWindowOpen() const;
    int PathWithPendingLoss() const;
    /**
     * Bring the path index (m_withRoom, m_hasRoom, m_withLosses, m_inflightTotal) up to date
     * with \p path after its inflight count, window, status, PSNs or lost PSNs changed. The
     * per-packet questions (is there room, where is a pending loss, how much is in flight)
     * then cost O(1) instead of a pass over every path.
     */
    void SyncPathIndex(const PathState& path);
    /// \return "" if the in-flight counts of the path index agree with the paths, else how not.
    std::string CheckInflightIndex() const;

    /**
     * With EndpointConfig::checkInvariants, record in the endpoint (EndpointShared::
     * invariantFailure) whether the path index (\p inflightOnly: its in-flight counts) is
     * stale where it is about to be read; otherwise nothing.
     */
    void VerifyPathIndex(bool inflightOnly) const
    {
        if (m_ep.Config().checkInvariants)
        {
            NoteStalePathIndex(inflightOnly);
        }
    }

    /// VerifyPathIndex's check, out of line.
    void NoteStalePathIndex(bool inflightOnly) const;

    /// Calls SyncPathIndex when it goes out of scope (for functions with many returns).
    class PathIndexSync
    {
      public:
        /// Sync \p path of \p requester at the end of the scope.
        PathIndexSync(MultipathRequester& requester, const PathState& path)
            : m_requester(requester),
              m_path(path)
        {
        }

        ~PathIndexSync()
        {
            m_requester.SyncPathIndex(m_path);
        }

        PathIndexSync(const PathIndexSync&) = delete;
        PathIndexSync& operator=(const PathIndexSync&) = delete;

      private:
        MultipathRequester& m_requester; //!< the requester
        const PathState& m_path;         //!< the path to sync
    };

    // Acknowledgements (metaroce-multipath-requester.cc)
    void AckEntry(PathState& path,
                  uint32_t psn,
                  Time now,
                  uint32_t triggerPsn,
                  uint32_t& newlyAcked,
                  Time& rttSample);

    /// What one path's acknowledgement did, for the steps after every record is applied.
    struct AckProgress
    {
        PathState* path{nullptr}; //!< the path acknowledged
        uint32_t newlyAcked{0};   //!< packets newly acknowledged
        double cwndBefore{0};     //!< its window before the ACK
        bool confirmed{false};    //!< it answers the path's confirmation probe
    };

    /**
     * Apply one path's acknowledgement (\p heldNs: how long the responder held it).
     * \return false if nothing follows (invalid, stale, or a probe reply).
     */
    bool ApplyAck(Time now, const Mah& ack, Time held, AckProgress& done);
    /// \return true if the record \p ack of \p path acknowledges a packet still in flight or
    /// lost: for a repeated record (Mah::FLAG_REPEAT), its original ACK was lost; for a
    /// probe reply that is not the awaited confirmation, data arrived since the probe.
    bool AcksOutstanding(const PathState& path, const Mah& ack) const;
    /// Loss detection, window event and RTO of the path \p done acknowledged.
    void FinishAck(Time now, const AckProgress& done);
    /// After evidence of later-sent packets, detect losses on the paths not in \p acked.
    void DetectLossesElsewhere(Time now, const PathSet& acked);
    /// \return true if the packet about to go out should carry AckReq ("coalesced" ACKs).
    bool AckRequested(const PathState& path,
                      uint32_t slot,
                      uint32_t packetIndex,
                      bool resend) const;
    double ConnectionWindow() const;
    void CreditPacket(uint32_t slot, uint32_t generation, uint32_t packetIndex);
    /// Finish READ/atomic request \p slot (its answer is complete): release its maxRdAtomic slot.
    void FinishRequest(uint32_t slot);
    /// Finish message \p slot successfully and complete its stream's finished head.
    void FinishMessage(uint32_t slot);
    /// \return the slot of the outstanding READ/atomic request (stream, message), or NONE.
    uint32_t FindRequest(uint16_t streamId, uint32_t messageSeq) const;
    void CompleteStreamHead(uint16_t streamId);
    // Timers, path health, RNR waits (metaroce-multipath-recovery.cc)
    bool SendProbe(Time now, TxDatagram& out, PathState& path);
    void UpdateRtt(Time now, PathState& path, Time sample);
    void NoteProgress(Time now);
    void HandleRetiredAck(Time now, PathState& path, const Mah& ack);
    void RetireEpoch(PathState& path);
    bool RnrHeld(uint32_t slot, uint32_t packetIndex) const;
    void ReleaseRnr(uint16_t streamId);
    void AskAfterRnr(Time now);
    /// Arm the RNR timer for the earliest stream in an RNR wait (disarm it if none waits).
    void SyncRnrTimer();
    /// Arm the CONNECTION timer from m_progressTime (disarm it if no message is outstanding).
    void SyncConnectionTimer();
    void ArmRto(PathState& path, Time now);
    /// Process the LOSS, RTO and PROBE timers of path \p p due at \p now, in that order.
    void HandlePathTimeout(Time now, PathState& p);
    void OnRto(Time now, PathState& path);
    bool QueuedNotLost(const PathState& path, Time now) const;
    bool MoveOutstanding(Time now, PathState& path, bool timeout);
    void SuspectPath(Time now, PathState& path);
    LossContext MakeLossContext(Time now) const;

    /// \return the connection's last smoothed RTT, else the endpoint's (-1: none yet).
    Time FallbackRtt() const
    {
        return m_lastSrtt >= 0 ? m_lastSrtt : m_ep.lastSrtt;
    }

    /// Declare \p path's lost packets (\p confirmed: also those its confirmation probe's
    /// reply did not acknowledge), and ask the path with a probe when it has suspects.
    void DetectLosses(Time now, PathState& path, bool confirmed = false);
    /// \return when \p path's outstanding confirmation probe is overdue (-1: none is out).
    Time ConfirmationDue(const PathState& path, Time now) const;
    /// \return how long \p path's latest confirmation probe may go unanswered (-1: unknown).
    Time ConfirmationWait(const PathState& path, const LossContext& ctx) const;
    void ArmTailProbe(Time now);
    void SendTailProbe();
    void ResetPathSequence(PathState& path);
    void FailPath(Time now, PathState& path);
    uint16_t FreshSourcePort();
    Time ProbeInterval();

    std::vector<std::unique_ptr<CongestionControl>> m_cc; //!< window control, one per path
    std::unique_ptr<PathScheduler> m_scheduler;           //!< path choice
    std::unique_ptr<LossDetection> m_loss;                //!< loss detection
    std::vector<PathState> m_paths;                       //!< paths (empty until first use)
    mutable std::unique_ptr<PathState> m_idleView;        //!< Path() before first use
    uint16_t m_portBase{0};                               //!< UDP source port of path 0
    RequesterTimers m_timers;                             //!< every deadline, per path and own
    std::vector<Stream> m_streams;                        //!< streams by id (grown on use)
    Stream m_answers; //!< the answers to the peer's READs and atomics (stream maxStreams)
    std::vector<SendMessage> m_messages;   //!< message slots (grown on use)
    std::vector<uint32_t> m_freeSlots;     //!< free message slots
    uint32_t m_outstanding{0};             //!< messages posted, not completed
    uint32_t m_responsesHeld{0};           //!< answers queued, not yet acknowledged
    std::vector<uint32_t> m_rdAtomicSlots; //!< READ/atomic requests sent, not finished
    uint32_t m_rdAtomicHeldStreams{0};     //!< streams waiting for maxRdAtomic room
    RingQueue<uint16_t> m_sendStreams;     //!< streams with unsent packets (round robin)
    RingQueue<Resend> m_resends;           //!< packets to resend on any path
    std::vector<Resend> m_rnrParked;       //!< packets waiting out an RNR wait
    uint32_t m_rnrHeldStreams{0};          //!< streams in an RNR wait
    PathSet m_probeNow;                    //!< paths with a probe due now
    // The path index (SyncPathIndex; checked against the paths by CheckInvariants)
    PathSet m_withRoom;                      //!< usable paths with inflight < cwnd
    PathSet m_hasRoom;                       //!< paths where PathState::HasRoom() holds
    PathSet m_withLosses;                    //!< paths with PSNs to resend (lostPsns)
    PathSet m_confirming;                    //!< paths with a confirmation out (confirmOut)
    uint32_t m_inflightTotal{0};             //!< sum of the paths' inflight
    std::vector<uint32_t> m_indexedInflight; //!< each path's inflight as m_inflightTotal has it
    std::vector<uint32_t> m_lostScratch;     //!< reused by loss detection
    RateHintFollower m_rateHint;             //!< pacing rate from the receiver's hints
    Pacer m_pacer;                           //!< spaces data packets at that rate
    Time m_progressTime{0};           //!< last acknowledged data or RNR NAK, or start of the work
    uint32_t m_progressCount{0};      //!< bumped whenever data is acknowledged (retry budget)
    double m_initialPathWindow;       //!< a path's window at start and when it comes back
    bool m_anyAck{false};             //!< an ACK arrived ("per-connection" caps the first flight)
    bool m_timeLoss{false};           //!< the loss detection may judge by time
    bool m_tailProbe{false};          //!< tailProbe "tlp" or "tlp-rto"
    bool m_tailProbeAfterRto{false};  //!< tailProbe "tlp-rto": a probe again after a timeout
    bool m_crossPathFailure{false};   //!< failureDetection "cross-path"
    bool m_adaptiveRto{false};        //!< rtoPolicy "adaptive"
    bool m_returnShare{false};        //!< returnWindow "share"
    bool m_holdConfirming{false};     //!< confirmHold "hold"
    bool m_perConnectionStart{false}; //!< initialWindow "per-connection" or "bdp"
    bool m_coalescedAcks{false};      //!< ackPolicy "coalesced" (AckReq only when pausing)
    bool m_repeatedAcks{false};       //!< "coalesced" with ackRepeat > 0
    std::vector<AckRecord> m_ackRecords;    //!< scratch: records of one coalesced ACK
    std::vector<AckProgress> m_ackProgress; //!< scratch: what they acknowledged
    Time m_minRtt{0};                       //!< smallest RTT sample of any path (0: none yet)
    Time m_rttMax[2]{-1, -1};               //!< largest sample, this and the last epoch
    Time m_rttMaxEpoch{0};                  //!< when this epoch began
    Time m_lastSrtt{-1};                    //!< smoothed RTT of the path sampled last (-1: none)
    bool m_tailProbeOut{false};             //!< a tail probe is out, no progress since
    bool m_newEvidence{false}; //!< the ACK being processed delivered a later-sent packet
    /// The ACK being processed found connectionWindow packets in flight (AckEvent).
    bool m_ackFoundCapFull{false};
    bool m_longPathPacing{false};    //!< longPathPacingGain and slowStartMinRtt are both on
    Time m_latestDeliveredSent{-1};  //!< latest send time of any packet acknowledged
    uint32_t m_reorderMultiplier{1}; //!< "rack" window multiplier (grown by duplicates)
    uint32_t m_lossEpisodes{0};      //!< loss detections since the multiplier last grew
    Time m_lastReorderGrowth{-1};    //!< when the multiplier last grew
};

} // namespace metaroce

#endif // METAROCE_MULTIPATH_REQUESTER_H
