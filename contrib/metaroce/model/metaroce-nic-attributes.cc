/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * MetaRoceNic::GetTypeId: the NIC's attributes (the engine's endpoint and default connection
 * configuration, field by field) and trace sources. The NIC's behaviour is in metaroce-nic.cc.
 */

#include "metaroce-nic.h"
#include "metaroce-ns3-compat.h"
#include "metaroce-policy-names.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace ns3
{

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

template <typename E>
class PolicyChecker;

/**
 * The value of a policy attribute (Transport, CongestionControl, ...): an EnumValue that, read
 * from text, takes only the names of its PolicyChecker. ns-3's EnumValue asserts on a name its
 * checker does not have (and reads past the checker's list where asserts are compiled out), so
 * a typo would crash instead of failing the Set or SetDefault that gave it.
 * \tparam E the enum type
 */
template <typename E>
class PolicyValue : public MetaRoceEnumValueOf<E>
{
  public:
    PolicyValue() = default;

    /// \param value the enum value
    explicit PolicyValue(E value)
        : MetaRoceEnumValueOf<E>(value)
    {
    }

    Ptr<AttributeValue> Copy() const override
    {
        return Create<PolicyValue<E>>(*this);
    }

    bool DeserializeFromString(std::string value, Ptr<const AttributeChecker> checker) override
    {
        const auto* policy = dynamic_cast<const PolicyChecker<E>*>(PeekPointer(checker));
        if (policy != nullptr && !policy->Has(value))
        {
            return false;
        }
        return MetaRoceEnumValueOf<E>::DeserializeFromString(value, checker);
    }
};

/**
 * The checker of a policy attribute: an EnumChecker whose choices are the names of one kind of
 * policy in the engine's registry (metaroce::PolicyNames), enum value i for name i.
 * \tparam E the enum type (values 0, 1, ... in registry order)
 */
template <typename E>
class PolicyChecker : public MetaRoceEnumCheckerOf<E>
{
  public:
    /// \param kind the kind of policy
    explicit PolicyChecker(metaroce::PolicyKind kind)
        : m_names(metaroce::PolicyNames(kind))
    {
        for (std::size_t i = 0; i < m_names.size(); ++i)
        {
            if (i == 0)
            {
                this->AddDefault(static_cast<E>(i), m_names[i]);
            }
            else
            {
                this->Add(static_cast<E>(i), m_names[i]);
            }
        }
    }

    /**
     * \param name a name
     * \return true if it is one of the choices
     */
    bool Has(const std::string& name) const
    {
        return std::find(m_names.begin(), m_names.end(), name) != m_names.end();
    }

    Ptr<AttributeValue> Create() const override
    {
        return ns3::Create<PolicyValue<E>>();
    }

  private:
    std::vector<std::string> m_names; //!< the choices, in enum value order
};

/**
 * An accessor that stores a policy attribute's enum value as the engine's name in a string
 * field of the NIC's configuration.
 * \tparam E the enum type
 */
template <typename E>
class PolicyAccessor : public AttributeAccessor
{
  public:
    /// Returns the field of a NIC.
    typedef std::function<std::string&(MetaRoceNic&)> Projection;

    /**
     * \param projection returns the field of a NIC
     * \param kind the kind of policy
     */
    PolicyAccessor(Projection projection, metaroce::PolicyKind kind)
        : m_projection(std::move(projection)),
          m_names(metaroce::PolicyNames(kind))
    {
    }

    bool Set(ObjectBase* object, const AttributeValue& value) const override
    {
        auto* nic = dynamic_cast<MetaRoceNic*>(object);
        auto* v = dynamic_cast<const MetaRoceEnumValueOf<E>*>(&value);
        if (nic == nullptr || v == nullptr)
        {
            return false;
        }
        const auto index = static_cast<std::size_t>(v->Get());
        if (index >= m_names.size())
        {
            return false;
        }
        m_projection(*nic) = m_names[index];
        return true;
    }

    bool Get(const ObjectBase* object, AttributeValue& value) const override
    {
        auto* nic = dynamic_cast<const MetaRoceNic*>(object);
        auto* v = dynamic_cast<MetaRoceEnumValueOf<E>*>(&value);
        if (nic == nullptr || v == nullptr)
        {
            return false;
        }
        const std::string& name = m_projection(const_cast<MetaRoceNic&>(*nic));
        auto it = std::find(m_names.begin(), m_names.end(), name);
        if (it == m_names.end())
        {
            return false;
        }
        v->Set(static_cast<E>(it - m_names.begin()));
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
    Projection m_projection;          //!< field of a NIC
    std::vector<std::string> m_names; //!< the engine's name of each enum value
};

/**
 * The pieces of a policy attribute over the engine configuration's field that \p kind names.
 * \tparam E the enum type; its values are 0 .. \p count - 1
 */
template <typename E>
struct PolicyAttribute
{
    /**
     * \param kind the kind of policy
     * \param count the number of values of E; aborts if the registry has another number of
     *        names (a policy added to the engine needs its enum value in MetaRoceNic)
     * \param engineDefault the engine's default name; aborts if it is not in the registry
     * \param projection returns the field of a NIC
     */
    PolicyAttribute(metaroce::PolicyKind kind,
                    std::size_t count,
                    const std::string& engineDefault,
                    std::function<std::string&(MetaRoceNic&)> projection)
    {
        const std::vector<std::string>& names = metaroce::PolicyNames(kind);
        NS_ABORT_MSG_IF(names.size() != count,
                        "MetaRoceNic: the engine has "
                            << names.size() << " " << metaroce::PolicyField(kind)
                            << " names but the attribute's enum " << count << " values");
        auto it = std::find(names.begin(), names.end(), engineDefault);
        NS_ABORT_MSG_IF(it == names.end(),
                        "MetaRoceNic: the engine's default " << metaroce::PolicyField(kind) << " \""
                                                             << engineDefault
                                                             << "\" is not in its registry");
        initialValue = PolicyValue<E>(static_cast<E>(it - names.begin()));
        accessor =
            Ptr<const AttributeAccessor>(new PolicyAccessor<E>(std::move(projection), kind), false);
        checker = Ptr<const AttributeChecker>(new PolicyChecker<E>(kind), false);
    }

    PolicyValue<E> initialValue;           //!< the engine's default
    Ptr<const AttributeAccessor> accessor; //!< field access
    Ptr<const AttributeChecker> checker;   //!< the registry's names
};

} // namespace

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
    using metaroce::PolicyKind;
    static const PolicyAttribute<Transport> transport(PolicyKind::TRANSPORT,
                                                      TRANSPORT_ROCEV2 + 1,
                                                      cc.transport,
                                                      METAROCE_CONN(transport));
    static const PolicyAttribute<PathScheduler> scheduler(PolicyKind::PATH_SCHEDULER,
                                                          PATH_SCHEDULER_SINGLE + 1,
                                                          cc.pathScheduler,
                                                          METAROCE_CONN(pathScheduler));
    static const PolicyAttribute<CongestionControl> control(PolicyKind::CONGESTION_CONTROL,
                                                            CC_FIXED + 1,
                                                            cc.congestionControl,
                                                            METAROCE_CONN(congestionControl));
    static const PolicyAttribute<LossDetection> detection(PolicyKind::LOSS_DETECTION,
                                                          LOSS_DETECTION_RACK_CONFIRM + 1,
                                                          cc.lossDetection,
                                                          METAROCE_CONN(lossDetection));
    static const PolicyAttribute<TailProbe> tailProbe(PolicyKind::TAIL_PROBE,
                                                      TAIL_PROBE_TLP_RTO + 1,
                                                      cc.tailProbe,
                                                      METAROCE_CONN(tailProbe));
    static const PolicyAttribute<FailureDetection> failure(PolicyKind::FAILURE_DETECTION,
                                                           FAILURE_DETECTION_RTO + 1,
                                                           cc.failureDetection,
                                                           METAROCE_CONN(failureDetection));
    static const PolicyAttribute<RtoPolicy> rtoPolicy(PolicyKind::RTO_POLICY,
                                                      RTO_POLICY_FIXED + 1,
                                                      cc.rtoPolicy,
                                                      METAROCE_CONN(rtoPolicy));
    static const PolicyAttribute<InitialWindow> initialWindow(PolicyKind::INITIAL_WINDOW,
                                                              INITIAL_WINDOW_BDP + 1,
                                                              cc.initialWindow,
                                                              METAROCE_CONN(initialWindow));
    static const PolicyAttribute<AckPolicy> ackPolicy(PolicyKind::ACK_POLICY,
                                                      ACK_POLICY_PER_PATH + 1,
                                                      cc.ackPolicy,
                                                      METAROCE_CONN(ackPolicy));
    static const PolicyAttribute<ReturnWindow> returnWindow(PolicyKind::RETURN_WINDOW,
                                                            RETURN_WINDOW_INITIAL + 1,
                                                            cc.returnWindow,
                                                            METAROCE_CONN(returnWindow));
    static const PolicyAttribute<ConfirmHold> confirmHold(PolicyKind::CONFIRM_HOLD,
                                                          CONFIRM_HOLD_HOLD + 1,
                                                          cc.confirmHold,
                                                          METAROCE_CONN(confirmHold));
    static const PolicyAttribute<RoceRecovery> recovery(PolicyKind::ROCE_RECOVERY,
                                                        ROCE_RECOVERY_IRN + 1,
                                                        cc.rocev2.recovery,
                                                        METAROCE_ROCE(recovery));
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
                          transport.initialValue,
                          transport.accessor,
                          transport.checker)
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
                          scheduler.initialValue,
                          scheduler.accessor,
                          scheduler.checker)
            .AddAttribute("CongestionControl",
                          "Per-path congestion control: \"aimd\", \"dctcp\" or \"fixed\".",
                          control.initialValue,
                          control.accessor,
                          control.checker)
            .AddAttribute("InitialWindow",
                          "The first flight: \"per-connection\" (InitialConnectionWindow "
                          "split over the paths, at most InitialPathWindow each), \"bdp\" "
                          "(InitialConnectionWindow split over the paths the scheduler sends on, "
                          "up to MaxPathWindow each) or \"per-path\" (InitialPathWindow each).",
                          initialWindow.initialValue,
                          initialWindow.accessor,
                          initialWindow.checker)
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
            .AddAttribute("SlowStartMinRtt",
                          "While a connection's minimum RTT is at least this, its path "
                          "windows grow by slow start (\"aimd\", \"dctcp\"; a long path, "
                          "not a datacenter's); 0 = never.",
                          TimeValue(PicoSeconds(cc.slowStartMinRtt)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(slowStartMinRtt)),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("LongPathPacingGain",
                          "On a long path (SlowStartMinRtt), pace at most at this many times "
                          "the path windows' sum per smoothed RTT; 0 = off, else 1 to 100.",
                          DoubleValue(cc.longPathPacingGain),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(longPathPacingGain)),
                          MakeDoubleChecker<double>(0, 100))
            .AddAttribute("PacingRate",
                          "Per-connection pacing ceiling (ConnectionConfig::lineRateBps); 0 = "
                          "unpaced unless rate-hinted (MetaRoCE) or the endpoint line rate "
                          "(RoCEv2).",
                          DataRateValue(DataRate(0)),
                          MakeFieldAccessor<DataRateValue>(METAROCE_CONN(lineRateBps)),
                          MakeDataRateChecker())
            .AddAttribute("LossDetection",
                          "Loss detection by name: \"sack-gap\" (SACK gaps of a path only), "
                          "\"rack\" (time-based, across paths), \"rack-tail\" (time-based at "
                          "the connection's tail only) or \"rack-confirm\" (time-based suspects "
                          "that a probe of the path confirms).",
                          detection.initialValue,
                          detection.accessor,
                          detection.checker)
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
            .AddAttribute("TailRttEpochRtts",
                          "\"rack-tail\": a path's RTT is taken as at least the largest sample "
                          "of any path in the last one to two epochs of this many minimum RTTs.",
                          DoubleValue(cc.tailRttEpochRtts),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(tailRttEpochRtts)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("TailProbe",
                          "Tail-loss probe: \"tlp\", \"tlp-rto\" (a probe again after each "
                          "timeout) or \"none\".",
                          tailProbe.initialValue,
                          tailProbe.accessor,
                          tailProbe.checker)
            .AddAttribute("TailProbeRtts",
                          "Delay of the tail-loss probe in smoothed RTTs.",
                          DoubleValue(cc.tailProbeRtts),
                          MakeFieldAccessor<DoubleValue>(METAROCE_CONN(tailProbeRtts)),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("FailureDetection",
                          "Path failure detection: \"cross-path\" (evidence from the other "
                          "paths) or \"rto\" (the RTO only).",
                          failure.initialValue,
                          failure.accessor,
                          failure.checker)
            .AddAttribute("SuspectLosses",
                          "\"cross-path\": time-declared losses of a silent path that make "
                          "it suspect.",
                          UintegerValue(cc.suspectLosses),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(suspectLosses)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("RtoPolicy",
                          "\"adaptive\" (floor from the minimum RTT, incast-aware) or "
                          "\"fixed\" (RtoMin floor).",
                          rtoPolicy.initialValue,
                          rtoPolicy.accessor,
                          rtoPolicy.checker)
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
            .AddAttribute("ReturnWindow",
                          "Window of a failed path whose probe is answered: \"share\" (the mean "
                          "window of the connection's other active paths, at least "
                          "InitialPathWindow) or \"initial\" (InitialPathWindow).",
                          returnWindow.initialValue,
                          returnWindow.accessor,
                          returnWindow.checker)
            .AddAttribute("ConfirmHold",
                          "\"none\": a path asked to confirm an overdue packet (LossDetection "
                          "\"rack-confirm\") keeps taking its share of the sends; \"hold\": it "
                          "takes no packet until the reply while another path has room.",
                          confirmHold.initialValue,
                          confirmHold.accessor,
                          confirmHold.checker)
            .AddAttribute("AckPolicy",
                          "MetaRoCE ACKs: \"coalesced\" (one ACK per connection with a record "
                          "per path, after AckCoalescePackets packets or at once when due) or "
                          "\"per-path\" (one ACK per path after AckEveryPackets packets).",
                          ackPolicy.initialValue,
                          ackPolicy.accessor,
                          ackPolicy.checker)
            .AddAttribute("AckCoalescePackets",
                          "\"coalesced\": data packets of the connection (any path) per ACK.",
                          UintegerValue(cc.ackCoalescePackets),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(ackCoalescePackets)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("AckEveryPackets",
                          "\"per-path\": the receiver ACKs after this many in-order packets "
                          "per path.",
                          UintegerValue(cc.ackEveryPackets),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(ackEveryPackets)),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("AckDelay",
                          "Longest a MetaRoCE ACK is held back for coalescing.",
                          TimeValue(PicoSeconds(cc.ackDelay)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(ackDelay)),
                          MakeTimeChecker())
            .AddAttribute("AckRepeat",
                          "\"coalesced\": a path's ACK record is repeated, unchanged, in up "
                          "to this many of the connection's next ACKs (0: never), so that a "
                          "lost ACK is made good before the sender's timer fires.",
                          UintegerValue(cc.ackRepeat),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(ackRepeat)),
                          MakeUintegerChecker<uint32_t>(0, 255))
            .AddAttribute("AckRepeatGap",
                          "\"coalesced\": only the ACK record of a path whose latest packet "
                          "came at least this long after the one before is repeated.",
                          TimeValue(PicoSeconds(cc.ackRepeatGap)),
                          MakeFieldAccessor<TimeValue>(METAROCE_CONN(ackRepeatGap)),
                          MakeTimeChecker())
            .AddAttribute("MaxRdAtomic",
                          "MetaRoCE: RDMA READs and atomics outstanding at once (IB "
                          "max_rd_atomic); the responder keeps twice as many responses, with "
                          "the atomics' results, until they are acknowledged.",
                          UintegerValue(cc.maxRdAtomic),
                          MakeFieldAccessor<UintegerValue>(METAROCE_CONN(maxRdAtomic)),
                          MakeUintegerChecker<uint32_t>(1, 255))
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
                          recovery.initialValue,
                          recovery.accessor,
                          recovery.checker)
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
                            "unlimited). MetaRoCE reports it when the receiver's rate hint "
                            "changes; a long path's window pacing is in PathEvent's window "
                            "events.",
                            MakeTraceSourceAccessor(&MetaRoceNic::m_rateChangeTrace),
                            "ns3::MetaRoceNic::RateChangeTracedCallback");
#undef METAROCE_CONN
#undef METAROCE_ROCE
#undef METAROCE_EP
    return tid;
}

} // namespace ns3
