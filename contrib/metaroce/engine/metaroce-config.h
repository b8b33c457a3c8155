/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_CONFIG_H
#define METAROCE_CONFIG_H

#include "metaroce-time.h"
#include "metaroce-wire.h"

#include <cstdint>
#include <string>
#include <tuple>

/**
 * \file
 * Every engine constant as a named, documented configuration field. MetaRoCE's own values
 * are not public: each default below is our model's choice, and docs/engine.md says where
 * it comes from. The ns-3 adapter exposes each field as an Attribute; the HIL daemon reads
 * them from its configuration.
 */

namespace metaroce
{

/// Settings of one endpoint (one NIC): what is shared by all its connections.
struct EndpointConfig
{
    uint32_t localIp{0};       //!< IPv4 address of this endpoint (host order)
    double lineRateBps{100e9}; //!< NIC line rate: inbound capacity shared by the rate hint
    uint64_t seed{1};          //!< seed of the engine's PRNG (source-port rotation)
    bool icrc{true};           //!< compute and verify the ICRC of every datagram
    bool rateHint{true};       //!< receiver computes and advertises fair-share rate hints
    /// Fraction of the line rate the rate hint divides among active senders.
    double rateHintUtilization{1.0};
    /// A sender counts as active while it delivered data within this time.
    Time rateHintActiveTime{MicroSeconds(20)};
    /// How often the active-sender count behind the hint is recomputed (the "rate-hint period").
    Time rateHintPeriod{MicroSeconds(1)};
    uint32_t maxConnections{1u << 20}; //!< largest number of connections (QPNs 1..max)
    /// How early a paced packet may leave, and how much of a late wake-up the pacer makes up
    /// (Pacer): 0 in the simulator, the timer granularity of a real host in the HIL.
    Time pacingSlack{0};
    /**
     * QPNs this endpoint hands out: FIRST_QPN + qpnOffset + k * qpnStride, k = 0, 1, ...
     * Several endpoints of one host (the HIL daemon's shards) take disjoint classes, so that a
     * datagram's destination QPN alone says which endpoint owns it ((QPN - FIRST_QPN) mod
     * qpnStride), as a NIC steers by QPN. 1 and 0 (every QPN) in the simulator. Requires
     * qpnOffset < qpnStride.
     */
    uint32_t qpnStride{1};
    uint32_t qpnOffset{0}; //!< see qpnStride
    /// For tests: connections check their derived state (indexes, running totals) against its
    /// source wherever it is read, and Endpoint::CheckInvariants reports the first
    /// disagreement. Costs a pass over a connection's paths per read.
    bool checkInvariants{false};
};

/**
 * Settings of one connection. The two ends of a connection must agree on mtu, numPaths and
 * maxOutstandingWrs (the HIL control plane and the ns-3 helper exchange them).
 */
struct ConnectionConfig
{
    /// Transport engine, chosen by name: "metaroce" (this engine) or "rocev2" (baseline).
    std::string transport{"metaroce"};
    uint32_t mtu{4096};                //!< payload bytes per packet
    uint32_t maxMessageSize{1u << 30}; //!< largest message, bytes
    uint16_t maxStreams{1024};         //!< stream ids 0..maxStreams-1 are valid
    uint32_t maxOutstandingWrs{1024};  //!< send work requests not yet completed
    uint32_t maxPostedRecvs{1024};     //!< receive work requests posted per stream

    /// Most paths a connection may have.
    static constexpr uint32_t MAX_PATHS = 128;
    static constexpr uint32_t MIN_MTU = 64;    //!< smallest mtu
    static constexpr uint32_t MAX_MTU = 65536; //!< largest mtu

    /// \return true if \p mtu is a multiple of 4 in [MIN_MTU, MAX_MTU].
    static bool IsValidMtu(uint32_t mtu)
    {
        return mtu >= MIN_MTU && mtu <= MAX_MTU && (mtu % 4) == 0;
    }

    // Paths
    uint32_t numPaths{8}; //!< first-class paths (1..MAX_PATHS)
    /// PSNs a path may have outstanding past its cumulative PSN, and the receiver tracks: the
    /// SACK window (at most the 256 bits of the ACK's bitmap).
    uint32_t sackWindow{SACK_BITS};
    /// UDP source port of path 0 (path i uses base+i); 0 = drawn from the PRNG.
    uint16_t sourcePortBase{0};
    std::string pathScheduler{"spray"}; //!< "spray" or "single"

    // Congestion control (per path, under one connection cap)
    std::string congestionControl{"aimd"}; //!< "aimd", "dctcp" or "fixed"
    double initialPathWindow{4};           //!< packets in flight per path at start ("per-path")
    /// "per-path": every path starts with initialPathWindow. "per-connection": the first
    /// flight of the connection is initialConnectionWindow packets (about one BDP), split
    /// over the paths (at least minPathWindow, at most initialPathWindow each), so that it
    /// does not grow with numPaths; until the first ACK the connection sends no more. "bdp"
    /// [M]: as "per-connection", but split over the paths the scheduler sends on (one for
    /// "single") and capped at maxPathWindow instead of initialPathWindow, so that a
    /// connection with fewer than initialConnectionWindow / initialPathWindow paths also
    /// starts with about one BDP (the default since 2026-12-06; docs/validation.md).
    std::string initialWindow{"bdp"};
    double initialConnectionWindow{32}; //!< "bdp", "per-connection": first flight, packets
    double minPathWindow{1};            //!< floor of a path window, packets
    double maxPathWindow{224};          //!< ceiling of a path window, packets (< SACK window)
    double connectionWindow{512};       //!< cap on packets in flight over all paths
    double aimdIncrease{1};             //!< additive increase, packets per path per RTT
    double aimdDecrease{0.5};           //!< multiplicative decrease factor on an ECN echo
    double dctcpGain{1.0 / 16};         //!< DCTCP alpha gain g ("dctcp")
    /// Window factor applied when a SACK gap reveals loss (1 = loss is not a congestion signal).
    double lossWindowFactor{1.0};
    /**
     * "aimd", "dctcp" [M]: while the connection's minimum RTT is at least this, a path's
     * window grows by slow start (+1 packet per packet acknowledged: doubling per round trip)
     * until its first ECN echo (or decrease), until the connection has connectionWindow
     * packets in flight, or up to maxPathWindow; after an RTO up to aimdDecrease x the window
     * the timeout collapsed (not after one before the path's first RTT sample). Far above any
     * datacenter round trip, so that only a long path (1-10 ms: a WAN, a forwarder, a slow lab
     * link) reaches the cap in a few round trips instead of the hundreds of +aimdIncrease steps. 0
     * turns it off.
     */
    Time slowStartMinRtt{MicroSeconds(500)};
    /// [M] While the connection's minimum RTT is at least slowStartMinRtt (a long path), pace
    /// its packets at most at this many times the sum of its path windows per smoothed RTT
    /// (as Linux TCP paces at 2 x cwnd / SRTT in slow start), so that a long path's window
    /// does not arrive at the receiver as one burst; the rate hint and lineRateBps still cap
    /// it. 0 turns it off.
    double longPathPacingGain{2};
    double lineRateBps{0}; //!< pacing ceiling, b/s (0 = unpaced unless rate-hinted)

    // Loss detection and retransmission
    /// Loss detection by name: "rack-confirm" (the default: "rack"'s overdue packets are
    /// suspects, which a probe of their path confirms or clears), "sack-gap" (a SACK gap of
    /// the path is loss), "rack" (also time-based across paths: see docs/engine.md for why it
    /// is not the default) or "rack-tail" ("rack" at the tail only).
    std::string lossDetection{"rack-confirm"};
    /// A packet is lost once this many packets sent after it on its path are acknowledged.
    uint32_t reorderThreshold{1};
    /// "rack": the reordering window as a fraction of the connection's minimum RTT ...
    double rackReorderFraction{0.25};
    Time rackReorderMin{NanoSeconds(500)}; //!< ... and its floor
    /// "rack-tail": a path's RTT is taken as at least the largest sample of any path in the
    /// last one to two epochs of this many minimum RTTs.
    double tailRttEpochRtts{4};
    /// "tlp": with packets outstanding and nothing else to send, resend the newest one after
    /// tailProbeRtts smoothed RTTs, so a lost tail costs round trips, not an RTO (one probe
    /// until an ACK makes progress); "tlp-rto": "tlp", and a probe is allowed again after
    /// each timeout, so a packet lost again at the tail waits for a probe, not an RTO; "none".
    std::string tailProbe{"tlp-rto"};
    double tailProbeRtts{2}; //!< the tail probe's delay in smoothed RTTs
    /// "cross-path": a path whose packets are declared lost by time (later-sent packets on
    /// other paths arrived) suspectLosses times without any ACK of its own is suspect at once:
    /// its packets move and a probe asks it; "rto": only the RTO takes a path out.
    std::string failureDetection{"cross-path"};
    uint32_t suspectLosses{2}; //!< "cross-path": time-declared losses of a silent path
    /// "fixed": RTO = srtt + 4 rttvar, at least rtoMin. "adaptive": at least
    /// max(rtoFloor, rtoMinRttFactor x the path's minimum RTT) instead, and never less than
    /// the minimum RTT plus the time the connection's packets in flight take to drain at
    /// the receiver's advertised fair share (what the receiver knows of an incast queue).
    std::string rtoPolicy{"adaptive"};
    Time rtoFloor{MicroSeconds(10)};       //!< "adaptive": absolute RTO floor
    double rtoMinRttFactor{4};             //!< "adaptive": RTO floor in minimum RTTs
    Time rtoInitial{MicroSeconds(200)};    //!< RTO before the first RTT sample
    Time rtoMin{MicroSeconds(100)};        //!< RTO floor
    Time rtoMax{MilliSeconds(10)};         //!< RTO ceiling (after backoff)
    uint32_t failureThreshold{3};          //!< consecutive RTOs without an ACK that fail a path
    Time probeInterval{MicroSeconds(100)}; //!< probe period of a failed path
    /// The window of a failed path whose probe is answered: "share", the mean window of the
    /// connection's other active paths (at least initialPathWindow), so that a returned
    /// plane carries its share at once; "initial", initialPathWindow (AIMD grows it back).
    std::string returnWindow{"share"};
    /// "none" (the default): a path asked to confirm an overdue packet ("rack-confirm") keeps
    /// taking its share of the sends until it is found failed; "hold" [M]: it takes no packet
    /// until the reply while another path has room, so a path that stopped delivering stops
    /// taking sends at the first evidence (docs/validation.md: experiment 4 recovers in
    /// fewer round trips, random loss costs more timeouts; not the default for that reason).
    std::string confirmHold{"none"};
    /// Give up (RETRY_EXC_ERR) when no path has acknowledged data for this long. Time in
    /// which the host did not run the engine (a late timer, a clock jump) does not count.
    Time connectionTimeout{MilliSeconds(100)};
    /// Timeouts with data to resend, in a row without any data acknowledged, before the
    /// oldest resent message completes with RETRY_EXC_ERR: IB's retry_cnt. Probe replies,
    /// RNR NAKs and SACK-gap resends neither count nor refresh it (at most 255).
    uint32_t retryLimit{15};
    Time rnrRetryDelay{MicroSeconds(20)}; //!< wait before resending after an RNR NAK
    uint32_t rnrRetryLimit{7};            //!< RNR retries per message; 7 means unlimited (IB)

    // Acknowledgements
    /// "coalesced": one ACK per connection carries the state of every path that received
    /// packets since the previous ACK (an ACK record each), sent after ackCoalescePackets
    /// packets, at once on a gap, a CE mark, a duplicate, a completed message or a packet
    /// whose sender asked for it (BTH AckReq: it has nothing more to send for now), else
    /// after ackDelay. "per-path": one ACK per path after ackEveryPackets in-order packets.
    std::string ackPolicy{"coalesced"};
    uint32_t ackCoalescePackets{4}; //!< "coalesced": packets (any path) per ACK
    uint32_t ackEveryPackets{1};    //!< "per-path": ACK after this many in-order packets
    Time ackDelay{MicroSeconds(2)}; //!< longest an ACK is held back for coalescing
    /// "coalesced": a path's record is repeated, unchanged and flagged REPEAT, in up to this
    /// many of the connection's next ACKs (0: never), so that a lost ACK of a path that
    /// carries one packet per round trip is made good by the ACK of a sibling path before
    /// the sender's timer fires. The sender acts on a repeated record only if it
    /// acknowledges something new.
    uint32_t ackRepeat{1};
    /// "coalesced": only the record of a path whose latest packet came at least this long
    /// after the one before is repeated (a path with denser arrivals ACKs itself in time).
    Time ackRepeatGap{MicroSeconds(5)};

    // RDMA READ and atomics
    /// READs and atomics outstanding at once (IB max_rd_atomic, 1-255; a later one waits to
    /// be sent). The responder keeps up to 2 x maxRdAtomic responses until the requester has
    /// acknowledged them (for an atomic, its result: the replay cache; a resent request is
    /// recognised by its stream and message and never executed twice); a request beyond that
    /// is left unacknowledged, so it comes again.
    uint32_t maxRdAtomic{16};

    /**
     * Settings of the RoCEv2 baseline (transport "rocev2"): InfiniBand RC queue-pair
     * attributes, ACK coalescing and DCQCN. The shared fields above that RoCEv2 uses are
     * mtu, maxMessageSize, maxOutstandingWrs, maxPostedRecvs, sourcePortBase (the QP's one
     * UDP source port; 0 = drawn from the PRNG) and lineRateBps (pacing ceiling; 0 = the
     * endpoint's line rate). docs/engine-rocev2.md gives the source of every default.
     */
    struct RoceV2Options
    {
        /// IB Local ACK Timeout exponent: the retransmission timer is 4.096 us * 2^n (14 =
        /// 67 ms, the perftest default); 0 disables the timer.
        uint8_t localAckTimeout{14};
        uint8_t retryCount{7}; //!< IB retry_cnt: timeouts/sequence NAKs without progress (0-7)
        uint8_t rnrRetry{7};   //!< IB rnr_retry: RNR NAKs without progress; 7 = unlimited
        /// IB min_rnr_timer code the responder puts in its RNR NAKs (1 = 0.01 ms; see
        /// ibv_modify_qp(3) for the 32-entry table).
        uint8_t minRnrTimer{1};
        uint32_t ackEveryPackets{4};    //!< responder ACKs after this many in-order packets
        Time ackDelay{MicroSeconds(2)}; //!< longest an ACK is held back for coalescing
        /// Cap on unacknowledged packets (0 = none beyond the PSN space): IB RC has no
        /// window for WRITE/SEND; a cap models a NIC's limit (or IRN's BDP-FC).
        uint32_t maxInflightPackets{0};

        // Loss recovery
        /// "gbn": go-back-N, as IB RC; "irn": IRN-style selective repeat (Mittal et al.,
        /// "Revisiting Network Support for RDMA", SIGCOMM 2018). Both ends must agree.
        std::string recovery{"gbn"};
        /// IRN: retransmission timeout while at most irnLowThreshold packets are
        /// outstanding (the IRN paper's RTO_low). Replaces localAckTimeout.
        Time irnRtoLow{MicroSeconds(100)};
        /// IRN: retransmission timeout otherwise (the IRN paper's RTO_high).
        Time irnRtoHigh{MicroSeconds(320)};
        uint32_t irnLowThreshold{3}; //!< IRN: the paper's N, packets outstanding for RTO_low
        /// IRN: double the RTO on each timeout without progress, up to localAckTimeout's
        /// value (off: the paper's fixed RTO_low/RTO_high, which a round trip grown above
        /// them, as behind a deep queue, turns into RETRY_EXC_ERR).
        bool irnRtoBackoff{false};
        /// IRN: PSNs the responder tracks past its expected PSN (its out-of-order bitmap) and
        /// the sender's SACK bitmap; a power of two. It also bounds the BDP cap: the sender
        /// keeps at most min(maxInflightPackets, irnWindow) PSNs outstanding (0 = irnWindow).
        uint32_t irnWindow{1024};

        uint8_t dscp{26};    //!< DSCP of data and ACK packets (NVIDIA's RoCE default)
        uint8_t cnpDscp{48}; //!< DSCP of CNPs (NVIDIA's CNP default)
        /// RDMA READs and atomics outstanding at once (IB max_rd_atomic, 1-255), and the
        /// responder's resources for them (max_dest_rd_atomic): the number of atomic results
        /// its replay cache keeps, so that a resent atomic is answered, never run twice.
        uint8_t maxRdAtomic{16};

        // DCQCN (Zhu et al., SIGCOMM 2015)
        bool dcqcn{true};                        //!< run the DCQCN reaction and notification points
        double dcqcnG{1.0 / 256};                //!< alpha EWMA gain g
        double dcqcnInitialAlpha{1.0};           //!< alpha before the first CNP
        Time dcqcnAlphaPeriod{MicroSeconds(55)}; //!< alpha decay period K without CNPs
        Time dcqcnRateIncreasePeriod{MicroSeconds(55)}; //!< rate-increase timer T
        uint64_t dcqcnByteCounter{10 * 1024 * 1024};    //!< rate-increase byte counter B
        uint32_t dcqcnFastRecoverySteps{5}; //!< F: increase events spent in fast recovery
        double dcqcnRaiBps{40e6};           //!< additive increase step R_AI
        double dcqcnRhaiBps{400e6};         //!< hyper increase step R_HAI
        double dcqcnMinRateBps{100e6};      //!< floor of the current rate
        Time cnpInterval{MicroSeconds(50)}; //!< notification point: at most one CNP per this
    };

    RoceV2Options rocev2; //!< RoCEv2 baseline settings (transport "rocev2")

    /// \return true if every field of the two configurations is equal.
    bool operator==(const ConnectionConfig& other) const;

    /// \return true if some field differs.
    bool operator!=(const ConnectionConfig& other) const
    {
        return !(*this == other);
    }

    /**
     * Check the configuration.
     * \param[out] why the first problem found
     * \return true if valid
     */
    bool Validate(std::string& why) const;

  private:
    /// Check the rocev2 settings. \return true if valid, else sets \p why.
    bool ValidateRoceV2(std::string& why) const;
};

} // namespace metaroce

#endif // METAROCE_CONFIG_H
