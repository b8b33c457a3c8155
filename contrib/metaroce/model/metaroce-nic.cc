/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-nic.h"

#include "metaroce-encap.h"
#include "metaroce-frame.h"
#include "metaroce-net-device.h"
#include "metaroce-ns3-compat.h"
#include "metaroce-wire.h"

#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/mac48-address.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceNic");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceNic);

namespace
{

/**
 * An attribute accessor over a field reached through a function: the engine configuration
 * structs are plain structs, so their fields cannot be named by a member pointer of the NIC.
 * \tparam V the AttributeValue type
 * \tparam F the field type
 */
template <typename V, typename F>
class FieldAccessor : public AttributeAccessor
{
  public:
    /// Returns the field of a NIC.
    typedef std::function<F&(MetaRoceNic&)> Projection;

    /**
     * \param projection returns the field of a NIC
     */
    explicit FieldAccessor(Projection projection)
        : m_projection(std::move(projection))
    {
    }

    bool Set(ObjectBase* object, const AttributeValue& value) const override
    {
        auto* nic = dynamic_cast<MetaRoceNic*>(object);
        auto* v = dynamic_cast<const V*>(&value);
        if (nic == nullptr || v == nullptr)
        {
            return false;
        }
        Assign(m_projection(*nic), *v);
        return true;
    }

    bool Get(const ObjectBase* object, AttributeValue& value) const override
    {
        auto* nic = dynamic_cast<const MetaRoceNic*>(object);
        auto* v = dynamic_cast<V*>(&value);
        if (nic == nullptr || v == nullptr)
        {
            return false;
        }
        Fetch(m_projection(const_cast<MetaRoceNic&>(*nic)), *v);
        return true;
    }

    bool HasGetter() const override
    {
        return true;
    }

    bool HasSetter() const override
    {
        return true;
    }

  private:
    /// Plain numeric, boolean and string fields.
    template <typename FF, typename VV>
    static void Assign(FF& field, const VV& v)
    {
        field = static_cast<FF>(v.Get());
    }

    /// Engine times (picoseconds) from ns-3 times.
    static void Assign(metaroce::Time& field, const TimeValue& v)
    {
        field = MetaRoceNic::ToEngineTime(v.Get());
    }

    /// Rates in b/s from DataRates.
    static void Assign(double& field, const DataRateValue& v)
    {
        field = static_cast<double>(v.Get().GetBitRate());
    }

    /// Plain numeric, boolean and string fields.
    template <typename FF, typename VV>
    static void Fetch(const FF& field, VV& v)
    {
        v.Set(field);
    }

    /// Engine times as ns-3 times.
    static void Fetch(const metaroce::Time& field, TimeValue& v)
    {
        v.Set(PicoSeconds(field));
    }

    /// Rates in b/s as DataRates.
    static void Fetch(const double& field, DataRateValue& v)
    {
        v.Set(DataRate(static_cast<uint64_t>(field)));
    }

    Projection m_projection; //!< field of a NIC
};

/**
 * \tparam V the AttributeValue type
 * \tparam F the field type
 * \param projection returns the field of a NIC
 * \return an accessor of that field
 */
template <typename V, typename F>
Ptr<const AttributeAccessor>
MakeFieldAccessor(std::function<F&(MetaRoceNic&)> projection)
{
    return Ptr<const AttributeAccessor>(new FieldAccessor<V, F>(std::move(projection)), false);
}

/// splitmix64 finaliser: spreads connection numbers over ports.
uint64_t
Mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

} // namespace

/// Turns engine observer calls into the NIC's trace sources.
class MetaRoceNic::Observer : public metaroce::EngineObserver
{
  public:
    /// \param nic the NIC whose traces fire
    explicit Observer(MetaRoceNic* nic)
        : m_nic(nic)
    {
    }

    void OnPathEvent(metaroce::Time /*now*/,
                     uint32_t qpn,
                     metaroce::PathEvent event,
                     const metaroce::PathState& path) override
    {
        if (m_nic->m_pathEventTrace.IsEmpty())
        {
            return;
        }
        MetaRocePathEventInfo info;
        info.qpn = qpn;
        info.event = event;
        info.pathId = path.id;
        info.status = path.status;
        info.cwnd = path.cwnd;
        info.inflight = path.inflight;
        info.srtt = PicoSeconds(path.rtt.Smoothed());
        info.latestRtt = PicoSeconds(path.rtt.Latest());
        info.sourcePort = path.sourcePort;
        m_nic->m_pathEventTrace(info);
    }

    void OnRateChange(metaroce::Time /*now*/, uint32_t qpn, double bitsPerSecond) override
    {
        m_nic->m_rateChangeTrace(qpn, bitsPerSecond);
    }

  private:
    MetaRoceNic* m_nic; //!< owner
};

TypeId
MetaRoceNic::GetTypeId()
{
    using CC = metaroce::ConnectionConfig;
    using EC = metaroce::EndpointConfig;
    using Nic = MetaRoceNic;
    // Field projections (lambdas in a member function may name private members).
#define METAROCE_CONN(field)                                                                       \
    std::function<decltype(CC::field)&(Nic&)>(                                                     \
        [](Nic & n) -> auto& { return n.m_connectionConfig.field; })
#define METAROCE_ROCE(field)                                                                       \
    std::function<decltype(CC::RoceV2Options::field)&(Nic&)>(                                      \
        [](Nic & n) -> auto& { return n.m_connectionConfig.rocev2.field; })
#define METAROCE_EP(field)                                                                         \
    std::function<decltype(EC::field)&(Nic&)>(                                                     \
        [](Nic & n) -> auto& { return n.m_endpointConfig.field; })
    static const CC cc;
    static const EC ec;
    static TypeId tid =
        TypeId("ns3::MetaRoceNic")
            .SetParent<Object>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceNic>()
            // ---- Endpoint (fixed once the endpoint exists)
            .AddAttribute("LineRate",
                          "NIC line rate the receiver's rate hint divides among senders; 0 = "
                          "the sum of the port rates (all planes).",
                          DataRateValue(DataRate(0)),
                          MakeFieldAccessor<DataRateValue>(std::function<double&(Nic&)>(
                              [](Nic& n) -> double& { return n.m_lineRateAttribute; })),
                          MakeDataRateChecker())
            .AddAttribute("Seed",
                          "Seed of the engine's PRNG (source-port draws); 0 = drawn from an "
                          "ns-3 random stream (RngSeed/RngRun, AssignStreams).",
                          UintegerValue(0),
                          MakeFieldAccessor<UintegerValue>(METAROCE_EP(seed)),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("Icrc",
                          "Compute and verify the RoCEv2 ICRC of every datagram. Off by "
                          "default in simulation: links lose whole frames and never corrupt "
                          "bytes, and the CRC over every 4 KiB payload is a large share of "
                          "the simulation's CPU time. The engine tests and the HIL daemon "
                          "check it; turn it on for pcaps whose ICRC Wireshark verifies.",
                          BooleanValue(false),
                          MakeFieldAccessor<BooleanValue>(METAROCE_EP(icrc)),
                          MakeBooleanChecker())
            .AddAttribute("RateHint",
                          "The receiver computes and advertises fair-share rate hints.",
                          BooleanValue(ec.rateHint),
                          MakeFieldAccessor<BooleanValue>(METAROCE_EP(rateHint)),
                          MakeBooleanChecker())
            .AddAttribute("RateHintUtilization",
                          "Fraction of the line rate the rate hint divides among senders.",
                          DoubleValue(ec.rateHintUtilization),
                          MakeFieldAccessor<DoubleValue>(METAROCE_EP(rateHintUtilization)),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("RateHintActiveTime",
                          "A sender counts as active while it delivered data within this time.",
                          TimeValue(PicoSeconds(ec.rateHintActiveTime)),
                          MakeFieldAccessor<TimeValue>(METAROCE_EP(rateHintActiveTime)),
                          MakeTimeChecker())
            .AddAttribute("RateHintPeriod",
                          "How often the active-sender count behind the hint is recomputed.",
                          TimeValue(PicoSeconds(ec.rateHintPeriod)),
                          MakeFieldAccessor<TimeValue>(METAROCE_EP(rateHintPeriod)),
                          MakeTimeChecker())
            .AddAttribute("MaxConnections",
                          "Largest number of connections (QPNs 1..max).",
                          UintegerValue(ec.maxConnections),
                          MakeFieldAccessor<UintegerValue>(METAROCE_EP(maxConnections)),
                          MakeUintegerChecker<uint32_t>(1))
            // ---- Default connection configuration
            .AddAttribute("Transport",
                          "Transport of new connections: \"metaroce\" or \"rocev2\".",
                          StringValue(cc.transport),
                          MakeFieldAccessor<StringValue>(METAROCE_CONN(transport)),
                          MakeStringChecker())
            .AddAttribute("Mtu",
                          "Payload bytes per packet.",
                          UintegerValue(cc.mtu),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(mtu)),
                          MakeUintegerChecker<uint32_t>(64, 65000))
            .AddAttribute("MaxMessageSize",
                          "Largest message, bytes.",
                          UintegerValue(cc.maxMessageSize),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(maxMessageSize)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxStreams",
                          "Stream ids 0..MaxStreams-1 are valid.",
                          UintegerValue(cc.maxStreams),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(maxStreams)),
                          MakeUintegerChecker<uint16_t>(1))
            .AddAttribute("MaxOutstandingWrs",
                          "Send work requests not yet completed, per connection.",
                          UintegerValue(cc.maxOutstandingWrs),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(maxOutstandingWrs)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxPostedRecvs",
                          "Receive work requests posted per stream.",
                          UintegerValue(cc.maxPostedRecvs),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(maxPostedRecvs)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("NumPaths",
                          "First-class paths of a MetaRoCE connection (1..128).",
                          UintegerValue(cc.numPaths),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(numPaths)),
                          MakeUintegerChecker<uint32_t>(1, metaroce::ConnectionConfig::MAX_PATHS))
            .AddAttribute("SourcePortBase",
                          "UDP source port of path 0 (path i uses base+i); 0 = drawn.",
                          UintegerValue(cc.sourcePortBase),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(sourcePortBase)),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("PathScheduler",
                          "Path scheduler: \"spray\" or \"single\".",
                          StringValue(cc.pathScheduler),
                          MakeFieldAccessor<StringValue>(METAROCE_CONN(pathScheduler)),
                          MakeStringChecker())
            .AddAttribute("CongestionControl",
                          "Per-path congestion control: \"aimd\", \"dctcp\" or \"fixed\".",
                          StringValue(cc.congestionControl),
                          MakeFieldAccessor<StringValue>(METAROCE_CONN(congestionControl)),
                          MakeStringChecker())
            .AddAttribute("InitialWindow",
                          "The first flight: \"per-connection\" (InitialConnectionWindow "
                          "split over the paths) or \"per-path\" (InitialPathWindow each).",
                          StringValue(cc.initialWindow),
                          MakeFieldAccessor<StringValue>(METAROCE_CONN(initialWindow)),
                          MakeStringChecker())
            .AddAttribute("InitialConnectionWindow",
                          "\"per-connection\": packets in the connection's first flight.",
                          DoubleValue(cc.initialConnectionWindow),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(initialConnectionWindow)),
                          MakeDoubleChecker<double>(1))
            .AddAttribute("InitialPathWindow",
                          "Packets in flight per path at start (\"per-path\"), and the "
                          "most a path starts with (\"per-connection\").",
                          DoubleValue(cc.initialPathWindow),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(initialPathWindow)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("MinPathWindow",
                          "Floor of a path window, packets.",
                          DoubleValue(cc.minPathWindow),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(minPathWindow)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("MaxPathWindow",
                          "Ceiling of a path window, packets (below the SACK window).",
                          DoubleValue(cc.maxPathWindow),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(maxPathWindow)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("ConnectionWindow",
                          "Cap on packets in flight over all paths of a connection.",
                          DoubleValue(cc.connectionWindow),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(connectionWindow)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("AimdIncrease",
                          "Additive increase, packets per path per RTT (\"aimd\").",
                          DoubleValue(cc.aimdIncrease),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(aimdIncrease)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("AimdDecrease",
                          "Multiplicative decrease factor on an ECN echo (\"aimd\").",
                          DoubleValue(cc.aimdDecrease),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(aimdDecrease)),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("DctcpGain",
                          "DCTCP alpha gain g (\"dctcp\").",
                          DoubleValue(cc.dctcpGain),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(dctcpGain)),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("LossWindowFactor",
                          "Window factor applied when a SACK gap reveals loss (1 = loss is "
                          "not a congestion signal).",
                          DoubleValue(cc.lossWindowFactor),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(lossWindowFactor)),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("PacingRate",
                          "Per-connection pacing ceiling (ConnectionConfig::lineRateBps); 0 = "
                          "unpaced unless rate-hinted (MetaRoCE) or the endpoint line rate "
                          "(RoCEv2).",
                          DataRateValue(DataRate(0)),
                          MakeFieldAccessor<DataRateValue>(METAROCE_CONN(lineRateBps)),
                          MakeDataRateChecker())
            .AddAttribute("LossDetection",
                          "Loss detection by name: \"rack\" (time-based, across paths) or "
                          "\"sack-gap\" (SACK gaps of a path only).",
                          StringValue(cc.lossDetection),
                          MakeFieldAccessor<StringValue>(METAROCE_CONN(lossDetection)),
                          MakeStringChecker())
            .AddAttribute("RackReorderFraction",
                          "\"rack\": reordering window as a fraction of the minimum RTT.",
                          DoubleValue(cc.rackReorderFraction),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(rackReorderFraction)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("RackReorderMin",
                          "\"rack\": floor of the reordering window.",
                          TimeValue(PicoSeconds(cc.rackReorderMin)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(rackReorderMin)),
                          MakeTimeChecker())
            .AddAttribute("TailProbe",
                          "Tail-loss probe: \"tlp\" or \"none\".",
                          StringValue(cc.tailProbe),
                          MakeFieldAccessor<StringValue>(METAROCE_CONN(tailProbe)),
                          MakeStringChecker())
            .AddAttribute("TailProbeRtts",
                          "Delay of the tail-loss probe in smoothed RTTs.",
                          DoubleValue(cc.tailProbeRtts),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(tailProbeRtts)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("FailureDetection",
                          "Path failure detection: \"cross-path\" (evidence from the other "
                          "paths) or \"rto\" (the RTO only).",
                          StringValue(cc.failureDetection),
                          MakeFieldAccessor<StringValue>(METAROCE_CONN(failureDetection)),
                          MakeStringChecker())
            .AddAttribute("SuspectLosses",
                          "\"cross-path\": time-declared losses of a silent path that make "
                          "it suspect.",
                          UintegerValue(cc.suspectLosses),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(suspectLosses)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("RtoPolicy",
                          "\"adaptive\" (floor from the minimum RTT, incast-aware) or "
                          "\"fixed\" (RtoMin floor).",
                          StringValue(cc.rtoPolicy),
                          MakeFieldAccessor<StringValue>(METAROCE_CONN(rtoPolicy)),
                          MakeStringChecker())
            .AddAttribute("RtoFloor",
                          "\"adaptive\": absolute RTO floor.",
                          TimeValue(PicoSeconds(cc.rtoFloor)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(rtoFloor)),
                          MakeTimeChecker())
            .AddAttribute("RtoMinRttFactor",
                          "\"adaptive\": RTO floor in minimum RTTs.",
                          DoubleValue(cc.rtoMinRttFactor),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(rtoMinRttFactor)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("ReorderThreshold",
                          "A packet is lost once this many later packets on its path are "
                          "acknowledged.",
                          UintegerValue(cc.reorderThreshold),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(reorderThreshold)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("RtoInitial",
                          "RTO before the first RTT sample.",
                          TimeValue(PicoSeconds(cc.rtoInitial)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(rtoInitial)),
                          MakeTimeChecker())
            .AddAttribute("RtoMin",
                          "RTO floor.",
                          TimeValue(PicoSeconds(cc.rtoMin)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(rtoMin)),
                          MakeTimeChecker())
            .AddAttribute("RtoMax",
                          "RTO ceiling (after backoff).",
                          TimeValue(PicoSeconds(cc.rtoMax)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(rtoMax)),
                          MakeTimeChecker())
            .AddAttribute("FailureThreshold",
                          "Consecutive RTOs without an ACK that fail a path.",
                          UintegerValue(cc.failureThreshold),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(failureThreshold)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("ProbeInterval",
                          "Probe period of a failed path.",
                          TimeValue(PicoSeconds(cc.probeInterval)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(probeInterval)),
                          MakeTimeChecker())
            .AddAttribute("ConnectionTimeout",
                          "Give up (RETRY_EXC_ERR) when no path acknowledged anything for "
                          "this long.",
                          TimeValue(PicoSeconds(cc.connectionTimeout)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(connectionTimeout)),
                          MakeTimeChecker())
            .AddAttribute("RnrRetryDelay",
                          "Wait before resending after an RNR NAK.",
                          TimeValue(PicoSeconds(cc.rnrRetryDelay)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(rnrRetryDelay)),
                          MakeTimeChecker())
            .AddAttribute("RnrRetryLimit",
                          "RNR retries per message; 7 means unlimited.",
                          UintegerValue(cc.rnrRetryLimit),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(rnrRetryLimit)),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("AckEveryPackets",
                          "MetaRoCE receiver ACKs after this many in-order packets per path.",
                          UintegerValue(cc.ackEveryPackets),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(ackEveryPackets)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("AckDelay",
                          "Longest a MetaRoCE ACK is held back for coalescing.",
                          TimeValue(PicoSeconds(cc.ackDelay)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(ackDelay)),
                          MakeTimeChecker())
            // ---- RoCEv2 baseline
            .AddAttribute("RoceLocalAckTimeout",
                          "IB Local ACK Timeout exponent (4.096 us * 2^n; 0 disables).",
                          UintegerValue(cc.rocev2.localAckTimeout),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(localAckTimeout)),
                          MakeUintegerChecker<uint8_t>(0, 31))
            .AddAttribute("RoceRetryCount",
                          "IB retry_cnt (0-7).",
                          UintegerValue(cc.rocev2.retryCount),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(retryCount)),
                          MakeUintegerChecker<uint8_t>(0, 7))
            .AddAttribute("RoceRnrRetry",
                          "IB rnr_retry (0-7; 7 = unlimited).",
                          UintegerValue(cc.rocev2.rnrRetry),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(rnrRetry)),
                          MakeUintegerChecker<uint8_t>(0, 7))
            .AddAttribute("RoceMinRnrTimer",
                          "IB min_rnr_timer code of RNR NAKs.",
                          UintegerValue(cc.rocev2.minRnrTimer),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(minRnrTimer)),
                          MakeUintegerChecker<uint8_t>(0, 31))
            .AddAttribute("RoceAckEveryPackets",
                          "RoCEv2 responder ACKs after this many in-order packets.",
                          UintegerValue(cc.rocev2.ackEveryPackets),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(ackEveryPackets)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("RoceAckDelay",
                          "Longest a RoCEv2 ACK is held back for coalescing.",
                          TimeValue(PicoSeconds(cc.rocev2.ackDelay)),
                          MakeFieldAccessor<TimeValue>(METAROCE_ROCE(ackDelay)),
                          MakeTimeChecker())
            .AddAttribute("RoceMaxInflightPackets",
                          "Cap on unacknowledged RoCEv2 packets (0 = none); with RoceRecovery "
                          "irn, IRN's BDP cap (0 = RoceIrnWindow).",
                          UintegerValue(cc.rocev2.maxInflightPackets),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(maxInflightPackets)),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("RoceRecovery",
                          "RoCEv2 loss recovery: \"gbn\" (go-back-N, IB RC) or \"irn\" "
                          "(IRN selective repeat, Mittal et al. SIGCOMM 2018). Both ends must "
                          "agree.",
                          StringValue(cc.rocev2.recovery),
                          MakeFieldAccessor<StringValue>(METAROCE_ROCE(recovery)),
                          MakeStringChecker())
            .AddAttribute("RoceIrnRtoLow",
                          "IRN: retransmission timeout while at most RoceIrnLowThreshold "
                          "packets are outstanding (RTO_low).",
                          TimeValue(PicoSeconds(cc.rocev2.irnRtoLow)),
                          MakeFieldAccessor<TimeValue>(METAROCE_ROCE(irnRtoLow)),
                          MakeTimeChecker())
            .AddAttribute("RoceIrnRtoHigh",
                          "IRN: retransmission timeout otherwise (RTO_high).",
                          TimeValue(PicoSeconds(cc.rocev2.irnRtoHigh)),
                          MakeFieldAccessor<TimeValue>(METAROCE_ROCE(irnRtoHigh)),
                          MakeTimeChecker())
            .AddAttribute("RoceIrnLowThreshold",
                          "IRN: outstanding packets up to which RTO_low applies (the paper's N).",
                          UintegerValue(cc.rocev2.irnLowThreshold),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(irnLowThreshold)),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("RoceIrnWindow",
                          "IRN: PSNs tracked out of order by the responder and SACKed at the "
                          "sender (a power of two up to 65536); bounds the BDP cap.",
                          UintegerValue(cc.rocev2.irnWindow),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(irnWindow)),
                          MakeUintegerChecker<uint32_t>(1, 1u << 16))
            .AddAttribute("RoceDscp",
                          "DSCP of RoCEv2 data and ACK packets.",
                          UintegerValue(cc.rocev2.dscp),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(dscp)),
                          MakeUintegerChecker<uint8_t>(0, 63))
            .AddAttribute("RoceCnpDscp",
                          "DSCP of CNPs.",
                          UintegerValue(cc.rocev2.cnpDscp),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(cnpDscp)),
                          MakeUintegerChecker<uint8_t>(0, 63))
            .AddAttribute("Dcqcn",
                          "Run DCQCN on RoCEv2 connections.",
                          BooleanValue(cc.rocev2.dcqcn),
                          MakeFieldAccessor<BooleanValue>(METAROCE_ROCE(dcqcn)),
                          MakeBooleanChecker())
            .AddAttribute("DcqcnG",
                          "DCQCN alpha EWMA gain g.",
                          DoubleValue(cc.rocev2.dcqcnG),
                          MakeFieldAccessor<DoubleValue>(METAROCE_ROCE(dcqcnG)),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("DcqcnInitialAlpha",
                          "DCQCN alpha before the first CNP.",
                          DoubleValue(cc.rocev2.dcqcnInitialAlpha),
                          MakeFieldAccessor<DoubleValue>(METAROCE_ROCE(dcqcnInitialAlpha)),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("DcqcnAlphaPeriod",
                          "DCQCN alpha decay period K.",
                          TimeValue(PicoSeconds(cc.rocev2.dcqcnAlphaPeriod)),
                          MakeFieldAccessor<TimeValue>(METAROCE_ROCE(dcqcnAlphaPeriod)),
                          MakeTimeChecker())
            .AddAttribute("DcqcnRateIncreasePeriod",
                          "DCQCN rate-increase timer T.",
                          TimeValue(PicoSeconds(cc.rocev2.dcqcnRateIncreasePeriod)),
                          MakeFieldAccessor<TimeValue>(METAROCE_ROCE(dcqcnRateIncreasePeriod)),
                          MakeTimeChecker())
            .AddAttribute("DcqcnByteCounter",
                          "DCQCN rate-increase byte counter B.",
                          UintegerValue(cc.rocev2.dcqcnByteCounter),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(dcqcnByteCounter)),
                          MakeUintegerChecker<uint64_t>(1))
            .AddAttribute("DcqcnFastRecoverySteps",
                          "DCQCN F: increase events spent in fast recovery.",
                          UintegerValue(cc.rocev2.dcqcnFastRecoverySteps),
                          MakeFieldAccessor<UintegerValue>(METAROCE_ROCE(dcqcnFastRecoverySteps)),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("DcqcnRai",
                          "DCQCN additive increase step R_AI.",
                          DataRateValue(DataRate(uint64_t(cc.rocev2.dcqcnRaiBps))),
                          MakeFieldAccessor<DataRateValue>(METAROCE_ROCE(dcqcnRaiBps)),
                          MakeDataRateChecker())
            .AddAttribute("DcqcnRhai",
                          "DCQCN hyper increase step R_HAI.",
                          DataRateValue(DataRate(uint64_t(cc.rocev2.dcqcnRhaiBps))),
                          MakeFieldAccessor<DataRateValue>(METAROCE_ROCE(dcqcnRhaiBps)),
                          MakeDataRateChecker())
            .AddAttribute("DcqcnMinRate",
                          "DCQCN floor of the current rate.",
                          DataRateValue(DataRate(uint64_t(cc.rocev2.dcqcnMinRateBps))),
                          MakeFieldAccessor<DataRateValue>(METAROCE_ROCE(dcqcnMinRateBps)),
                          MakeDataRateChecker())
            .AddAttribute("CnpInterval",
                          "DCQCN notification point: at most one CNP per this interval.",
                          TimeValue(PicoSeconds(cc.rocev2.cnpInterval)),
                          MakeFieldAccessor<TimeValue>(METAROCE_ROCE(cnpInterval)),
                          MakeTimeChecker())
            // ---- Traces
            .AddTraceSource("Tx",
                            "A datagram was handed to a port: (qpn, path, PSN, opcode, "
                            "length, port, UDP source port).",
                            MakeTraceSourceAccessor(&MetaRoceNic::m_txTrace),
                            "ns3::MetaRoceNic::DatagramTracedCallback")
            .AddTraceSource("Rx",
                            "A datagram arrived (before the engine processed it).",
                            MakeTraceSourceAccessor(&MetaRoceNic::m_rxTrace),
                            "ns3::MetaRoceNic::DatagramTracedCallback")
            .AddTraceSource("Completion",
                            "A work completion was polled from the engine.",
                            MakeTraceSourceAccessor(&MetaRoceNic::m_completionTrace),
                            "ns3::MetaRoceNic::CompletionTracedCallback")
            .AddTraceSource("PathEvent",
                            "A path event (window, RTT, loss, timeout, failed, recovered).",
                            MakeTraceSourceAccessor(&MetaRoceNic::m_pathEventTrace),
                            "ns3::MetaRoceNic::PathEventTracedCallback")
            .AddTraceSource("RateChange",
                            "A connection's sending rate limit changed: (qpn, b/s; 0 = "
                            "unlimited).",
                            MakeTraceSourceAccessor(&MetaRoceNic::m_rateChangeTrace),
                            "ns3::MetaRoceNic::RateChangeTracedCallback");
#undef METAROCE_CONN
#undef METAROCE_ROCE
#undef METAROCE_EP
    return tid;
}

MetaRoceNic::MetaRoceNic()
{
    NS_LOG_FUNCTION(this);
    m_seedStream = CreateObject<UniformRandomVariable>();
}

MetaRoceNic::~MetaRoceNic()
{
    NS_LOG_FUNCTION(this);
}

void
MetaRoceNic::DoDispose()
{
    NS_LOG_FUNCTION(this);
    m_timer.Cancel();
    for (PortState& p : m_ports)
    {
        p.device->SetPullCallback(MakeNullCallback<Ptr<Packet>>());
        p.device->SetFrameReceiveCallback(MetaRoceNetDevice::FrameReceiveCallback());
    }
    m_ports.clear();
    if (m_endpoint)
    {
        m_endpoint->SetObserver(nullptr);
    }
    m_endpoint.reset();
    m_observer.reset();
    m_node = nullptr;
    m_seedStream = nullptr;
    m_completionCallback = CompletionCallback();
    Object::DoDispose();
}

metaroce::Time
MetaRoceNic::ToEngineTime(Time t)
{
    return t.GetPicoSeconds();
}

Time
MetaRoceNic::FromEngineTime(metaroce::Time t)
{
    // Round up, so a timer never fires before its deadline (the engine would do nothing and
    // ask for the same deadline again).
    const int64_t psPerStep = TimeStep(1).GetPicoSeconds();
    if (psPerStep <= 1)
    {
        return PicoSeconds(t);
    }
    return TimeStep((t + psPerStep - 1) / psPerStep);
}

void
MetaRoceNic::Setup(Ptr<Node> node, uint32_t address, std::vector<Ptr<MetaRoceNetDevice>> ports)
{
    NS_LOG_FUNCTION(this << node << address);
    NS_ABORT_MSG_IF(!m_ports.empty(), "MetaRoceNic::Setup called twice");
    NS_ABORT_MSG_IF(ports.empty(), "MetaRoceNic needs at least one port");
    m_node = node;
    m_address = address;
    for (uint32_t i = 0; i < ports.size(); ++i)
    {
        PortState p;
        p.device = ports[i];
        m_ports.push_back(p);
        ports[i]->SetPullCallback(MakeCallback(&MetaRoceNic::Pull, this).Bind(i));
        ports[i]->SetFrameReceiveCallback(MakeCallback(&MetaRoceNic::Receive, this));
        ports[i]->SetNicPort(this, i);
    }
    if (node && !node->GetObject<MetaRoceNic>())
    {
        node->AggregateObject(this);
    }
}

uint32_t
MetaRoceNic::GetAddress() const
{
    return m_address;
}

Ptr<Node>
MetaRoceNic::GetNode() const
{
    return m_node;
}

uint32_t
MetaRoceNic::GetNPorts() const
{
    return static_cast<uint32_t>(m_ports.size());
}

Ptr<MetaRoceNetDevice>
MetaRoceNic::GetPort(uint32_t i) const
{
    NS_ABORT_MSG_IF(i >= m_ports.size(), "port " << i << " out of range");
    return m_ports[i].device;
}

double
MetaRoceNic::GetLineRateBps() const
{
    if (m_lineRateAttribute > 0)
    {
        return m_lineRateAttribute;
    }
    double sum = 0;
    for (const PortState& p : m_ports)
    {
        sum += static_cast<double>(p.device->GetDataRate().GetBitRate());
    }
    return sum;
}

std::vector<uint8_t>&
MetaRoceNic::Scratch(bool receive)
{
    thread_local std::vector<uint8_t> buffers[2];
    return buffers[receive ? 1 : 0];
}

void
MetaRoceNic::EnsureEndpoint()
{
    if (m_endpoint)
    {
        return;
    }
    NS_ABORT_MSG_IF(m_ports.empty(), "MetaRoceNic used before Setup()");
    metaroce::EndpointConfig cfg = m_endpointConfig;
    cfg.localIp = m_address;
    cfg.lineRateBps = GetLineRateBps();
    if (cfg.seed == 0)
    {
        cfg.seed =
            (uint64_t(m_seedStream->GetInteger(1, std::numeric_limits<uint32_t>::max())) << 32) ^
            m_seedStream->GetInteger(0, std::numeric_limits<uint32_t>::max());
    }
    m_endpoint = std::make_unique<metaroce::Endpoint>(cfg);
    m_observer = std::make_unique<Observer>(this);
    m_endpoint->SetObserver(m_observer.get());
    uint32_t largestMtu = m_connectionConfig.mtu;
    for (const PortState& p : m_ports)
    {
        largestMtu = std::max<uint32_t>(largestMtu, p.device->GetMtu());
    }
    const size_t cap =
        metaroce::FRAME_HEADERS_SIZE + metaroce::Endpoint::MaxDatagramSize(largestMtu);
    m_txBuffer.resize(std::max(m_txBuffer.size(), cap));
    m_rxBuffer.resize(std::max(m_rxBuffer.size(), cap + 64));
}

metaroce::Endpoint&
MetaRoceNic::GetEndpoint()
{
    EnsureEndpoint();
    return *m_endpoint;
}

metaroce::ConnectionConfig
MetaRoceNic::GetDefaultConnectionConfig() const
{
    return m_connectionConfig;
}

void
MetaRoceNic::SetDefaultConnectionConfig(const metaroce::ConnectionConfig& cfg)
{
    m_connectionConfig = cfg;
}

metaroce::MemoryRegion
MetaRoceNic::RegisterMemory(void* base, uint64_t length, uint32_t access)
{
    return GetEndpoint().RegisterMemory(base, length, access);
}

bool
MetaRoceNic::DeregisterMemory(uint32_t lkey)
{
    return GetEndpoint().DeregisterMemory(lkey);
}

metaroce::PostStatus
MetaRoceNic::CreateConnection(uint32_t& qpn)
{
    return CreateConnection(m_connectionConfig, qpn, nullptr);
}

metaroce::PostStatus
MetaRoceNic::CreateConnection(const metaroce::ConnectionConfig& cfg,
                              uint32_t& qpn,
                              std::string* why)
{
    NS_LOG_FUNCTION(this);
    metaroce::Endpoint& ep = GetEndpoint();
    const size_t needed =
        metaroce::FRAME_HEADERS_SIZE + metaroce::Endpoint::MaxDatagramSize(cfg.mtu);
    m_txBuffer.resize(std::max(m_txBuffer.size(), needed));
    m_rxBuffer.resize(std::max(m_rxBuffer.size(), needed + 64));
    return ep.CreateConnection(cfg, qpn, why);
}

metaroce::PostStatus
MetaRoceNic::Connect(uint32_t qpn, uint32_t remoteIp, uint32_t remoteQpn)
{
    NS_LOG_FUNCTION(this << qpn << remoteIp << remoteQpn);
    metaroce::PostStatus st = GetEndpoint().Connect(qpn, remoteIp, remoteQpn);
    Pump();
    return st;
}

metaroce::PostStatus
MetaRoceNic::PostSend(uint32_t qpn, const metaroce::SendWr& wr)
{
    NS_LOG_FUNCTION(this << qpn << wr.wrId);
    metaroce::PostStatus st = GetEndpoint().PostSend(ToEngineTime(Simulator::Now()), qpn, wr);
    if (st == metaroce::PostStatus::OK)
    {
        Pump();
    }
    return st;
}

metaroce::PostStatus
MetaRoceNic::PostRecv(uint32_t qpn, const metaroce::RecvWr& wr)
{
    NS_LOG_FUNCTION(this << qpn << wr.wrId);
    metaroce::PostStatus st = GetEndpoint().PostRecv(ToEngineTime(Simulator::Now()), qpn, wr);
    if (st == metaroce::PostStatus::OK)
    {
        Pump();
    }
    return st;
}

void
MetaRoceNic::SetCompletionCallback(CompletionCallback callback)
{
    m_completionCallback = callback;
}

const metaroce::CounterSet&
MetaRoceNic::GetEngineCounters()
{
    return GetEndpoint().Counters();
}

uint64_t
MetaRoceNic::GetParkedDrops() const
{
    return m_parkedDrops;
}

int64_t
MetaRoceNic::AssignStreams(int64_t stream)
{
    NS_LOG_FUNCTION(this << stream);
    if (m_endpoint)
    {
        NS_LOG_WARN("AssignStreams after the endpoint was created: the seed is already drawn");
    }
    m_seedStream->SetStream(stream);
    return 1;
}

void
MetaRoceNic::Pump()
{
    if (!m_endpoint)
    {
        return;
    }
    if (m_inPump || m_pullDepth > 0)
    {
        // Re-entered from a completion callback or a pull: the running pump loops again.
        m_pumpAgain = true;
        if (m_pullDepth > 0 && !m_inPump && !m_deferredScheduled)
        {
            m_deferredScheduled = true;
            Simulator::ScheduleNow(&MetaRoceNic::DeferredPump, this);
        }
        return;
    }
    m_inPump = true;
    do
    {
        m_pumpAgain = false;
        DrainCompletions();
        // Wake idle ports: each pulls (PollTransmit) until it is busy or the engine has
        // nothing for it.
        for (PortState& p : m_ports)
        {
            if (!p.device->IsTransmitting())
            {
                p.device->NotifyPullReady();
            }
        }
    } while (m_pumpAgain);
    m_inPump = false;
    RearmTimer();
}

void
MetaRoceNic::DeferredPump()
{
    m_deferredScheduled = false;
    Pump();
}

void
MetaRoceNic::DrainCompletions()
{
    metaroce::Completion c;
    Ptr<MetaRoceNic> self = this;
    while (!m_heldCompletions.empty() || (m_endpoint && m_endpoint->PollCompletion(c)))
    {
        if (!m_heldCompletions.empty())
        {
            c = m_heldCompletions.front();
            m_heldCompletions.pop_front();
        }
        NS_LOG_LOGIC("completion wr " << c.wrId << " qpn " << c.connectionId << " "
                                      << metaroce::WcStatusName(c.status));
        m_completionTrace(c);
        if (!m_completionCallback.IsNull())
        {
            m_completionCallback(self, c);
        }
    }
}

void
MetaRoceNic::RearmTimer()
{
    const metaroce::Time deadline = m_endpoint->NextTimeout();
    if (deadline == m_timerAt &&
        (deadline == metaroce::TIME_INFINITE || MetaRoceIsPending(m_timer)))
    {
        return;
    }
    m_timer.Cancel();
    m_timerAt = deadline;
    if (deadline == metaroce::TIME_INFINITE)
    {
        return;
    }
    const Time at = FromEngineTime(deadline);
    const Time now = Simulator::Now();
    m_timer = Simulator::Schedule(at > now ? at - now : Time(0), &MetaRoceNic::Timeout, this);
}

void
MetaRoceNic::Timeout()
{
    m_timerAt = metaroce::TIME_INFINITE;
    m_endpoint->HandleTimeout(ToEngineTime(Simulator::Now()));
    Pump();
}

uint32_t
MetaRoceNic::PortOf(const metaroce::TxDatagram& tx) const
{
    const uint32_t n = static_cast<uint32_t>(m_ports.size());
    if (n == 1)
    {
        return 0;
    }
    if (tx.pathId >= 0)
    {
        return static_cast<uint32_t>(tx.pathId) % n;
    }
    return static_cast<uint32_t>(Mix(tx.connectionId) % n);
}

MetaRoceDatagramInfo
MetaRoceNic::Describe(const uint8_t* data,
                      size_t len,
                      uint32_t qpn,
                      int16_t pathId,
                      uint32_t port,
                      uint16_t srcPort)
{
    MetaRoceDatagramInfo info;
    info.qpn = qpn;
    info.pathId = pathId;
    info.length = static_cast<uint32_t>(len);
    info.port = port;
    info.srcPort = srcPort;
    if (len >= metaroce::Bth::SIZE)
    {
        const metaroce::Bth bth = metaroce::Bth::Read(data);
        info.psn = bth.psn;
        info.opcode = bth.opcode;
    }
    return info;
}

Ptr<Packet>
MetaRoceNic::Pull(uint32_t index)
{
    MetaRoceFrameInfo info;
    return PullFrame(index, info);
}

Ptr<Packet>
MetaRoceNic::PullFrame(uint32_t index, MetaRoceFrameInfo& info)
{
    if (!m_endpoint)
    {
        return nullptr;
    }
    PortState& me = m_ports[index];
    if (me.inPull)
    {
        return nullptr; // never re-enter a device from its own pull callback
    }
    me.inPull = true;
    ++m_pullDepth;
    Ptr<Packet> result;
    const metaroce::Time now = ToEngineTime(Simulator::Now());
    const uint8_t dataPriority = me.device->GetPriorityForDscp(0);
    for (;;)
    {
        if (!me.parked.empty())
        {
            if (me.device->IsPaused(me.parkedPriority.front()))
            {
                break;
            }
            result = me.parked.front();
            me.parked.pop_front();
            me.parkedPriority.pop_front();
            break;
        }
        if (me.device->IsPaused(dataPriority))
        {
            break; // do not take datagrams out of the engine while the port is paused
        }
        metaroce::TxDatagram tx;
        tx.buffer = m_txBuffer.data() + metaroce::FRAME_HEADERS_SIZE;
        tx.capacity = m_txBuffer.size() - metaroce::FRAME_HEADERS_SIZE;
        tx.zeroPayloadUnread = true; // a zero payload becomes the packet's virtual zero area
        if (!m_endpoint->PollTransmit(now, tx))
        {
            break;
        }
        const uint32_t portIndex = PortOf(tx);
        PortState& target = m_ports[portIndex];
        if (!target.macsKnown) // a port's addresses are fixed once it carries frames
        {
            Mac48Address::ConvertFrom(target.device->GetAddress()).CopyTo(target.mac.bytes);
            target.device->GetPeerMac().CopyTo(target.peerMac.bytes);
            target.macsKnown = target.device->GetPeer() != nullptr;
        }
        const size_t frameLen = metaroce::EncapsulateFrame(m_txBuffer.data(),
                                                           m_txBuffer.size(),
                                                           target.mac,
                                                           target.peerMac,
                                                           tx.meta,
                                                           tx.buffer,
                                                           tx.length);
        NS_ABORT_MSG_IF(frameLen == 0, "datagram of " << tx.length << " bytes does not fit");
        if (!m_txTrace.IsEmpty())
        {
            m_txTrace(Describe(tx.buffer,
                               tx.length,
                               tx.connectionId,
                               tx.pathId,
                               portIndex,
                               tx.meta.srcPort));
        }
        // Payload bytes of a virtual memory region are zeros: carry them as the packet's
        // virtual zero area instead of copying them (same bytes, no 4 KiB buffer per frame).
        // The engine says where the payload is and whether it is zeros it did not write.
        Ptr<Packet> frame = MetaRoceCreateFrame(m_txBuffer.data(),
                                                static_cast<uint32_t>(frameLen),
                                                metaroce::FRAME_HEADERS_SIZE + tx.payloadOffset,
                                                tx.payloadLength,
                                                tx.payloadZero);
        const uint8_t priority = target.device->GetPriorityForDscp(tx.meta.dscp);
        if (portIndex == index && !me.device->IsPaused(priority))
        {
            result = frame;
            info.meta = tx.meta; // what EncapsulateFrame wrote, so the fabric reads no bytes
            info.ttl = m_txBuffer[metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_TTL_OFFSET];
            info.ipHeaderLen = metaroce::IPV4_HEADER_SIZE;
            info.valid = true;
            break;
        }
        if (!target.device->IsLinkUp())
        {
            ++m_parkedDrops; // a dead port loses what is sent to it
            continue;
        }
        target.parked.push_back(frame);
        target.parkedPriority.push_back(priority);
        if (portIndex != index && !target.inPull && !target.device->IsTransmitting())
        {
            target.device->NotifyPullReady();
        }
    }
    --m_pullDepth;
    me.inPull = false;
    if (!m_inPump && m_pullDepth == 0)
    {
        // A pull outside the pump (the port finished a frame) changed the engine's timers and
        // may have produced completions.
        RearmTimer();
        metaroce::Completion c;
        while (m_endpoint->PollCompletion(c))
        {
            m_heldCompletions.push_back(c);
            m_pumpAgain = true;
        }
        if (m_pumpAgain && !m_deferredScheduled)
        {
            m_deferredScheduled = true;
            Simulator::ScheduleNow(&MetaRoceNic::DeferredPump, this);
        }
    }
    return result;
}

void
MetaRoceNic::Receive(Ptr<MetaRoceNetDevice> device, Ptr<Packet> frame)
{
    ReceiveFrame(PeekPointer(device), frame, MetaRoceFrameInfo());
}

void
MetaRoceNic::ReceiveFrame(MetaRoceNetDevice* device,
                          Ptr<Packet> frame,
                          const MetaRoceFrameInfo& info)
{
    if (!m_endpoint)
    {
        return;
    }
    const uint32_t size = frame->GetSize();
    if (size > m_rxBuffer.size())
    {
        m_rxBuffer.resize(size);
    }
    frame->CopyData(m_rxBuffer.data(), size);
    if (info.valid)
    {
        MetaRoceApplyPending(m_rxBuffer.data(), info); // the switches' rewrites, in their order
    }
    metaroce::ParsedFrame parsed;
    const metaroce::FrameStatus fs = metaroce::ParseFrame(m_rxBuffer.data(), size, parsed);
    if (fs != metaroce::FrameStatus::OK)
    {
        NS_LOG_WARN("dropping a frame: " << metaroce::FrameStatusName(fs));
        return;
    }
    if (!m_rxTrace.IsEmpty())
    {
        uint32_t portIndex = 0;
        for (uint32_t i = 0; i < m_ports.size(); ++i)
        {
            if (PeekPointer(m_ports[i].device) == device)
            {
                portIndex = i;
            }
        }
        metaroce::ParsedPacket pkt;
        int16_t pathId = -1;
        uint32_t qpn = 0;
        if (metaroce::ParseDatagram(parsed.datagram, parsed.datagramLen, pkt) ==
            metaroce::ParseStatus::OK)
        {
            qpn = pkt.bth.destQp;
            pathId = (pkt.info->headers & metaroce::HDR_MDH)   ? int16_t(pkt.mdh.pathId)
                     : (pkt.info->headers & metaroce::HDR_MAH) ? int16_t(pkt.mah.pathId)
                     : (pkt.info->headers & metaroce::HDR_MNH) ? int16_t(pkt.mnh.pathId)
                                                               : int16_t(-1);
        }
        m_rxTrace(Describe(parsed.datagram,
                           parsed.datagramLen,
                           qpn,
                           pathId,
                           portIndex,
                           parsed.meta.srcPort));
    }
    const metaroce::RxStatus st = m_endpoint->HandleDatagram(ToEngineTime(Simulator::Now()),
                                                             parsed.meta,
                                                             parsed.datagram,
                                                             parsed.datagramLen);
    if (st != metaroce::RxStatus::ACCEPTED)
    {
        NS_LOG_LOGIC("engine refused a datagram: " << metaroce::RxStatusName(st));
    }
    Pump();
}

} // namespace ns3
