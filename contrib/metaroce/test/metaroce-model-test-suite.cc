/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 unit tests of the model: enum attributes by name (the switch's, the scheduler's, the
 * NIC's policies) and the ns-3 API compatibility layer (metaroce-ns3-compat.h). They run in an ns-3
 * tree (./test.py -s metaroce-model) and in the standalone build (ctest -L ns3).
 */

#include "ns3/config.h"
#include "ns3/enum.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-ns3-compat.h"
#include "ns3/metaroce-policy-names.h"
#include "ns3/metaroce-scheduler.h"
#include "ns3/metaroce-switch.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"

#include <string>
#include <utility>
#include <vector>

using namespace ns3;

namespace
{
/**
 * The names an enum attribute accepts, as "a|b|c". (An unknown name is not set in these tests
 * on the switch's and the scheduler's enums: ns-3's EnumChecker asserts on it where asserts are
 * on, and reads past its list where not. The NIC's policy attributes reject it.)
 * \param tid The TypeId.
 * \param attribute The attribute's name.
 * \returns The names.
 */
std::string
Choices(TypeId tid, const std::string& attribute)
{
    TypeId::AttributeInformation info;
    if (!tid.LookupAttributeByName(attribute, &info))
    {
        return "(no attribute " + attribute + ")";
    }
    return info.checker->GetUnderlyingTypeInformation();
}
} // namespace

/**
 * \ingroup metaroce-tests
 * Enum attributes (MetaRoceMakeEnumAccessor) set and read by name and by value.
 */
class MetaRoceEnumAttributeTestCase : public TestCase
{
  public:
    MetaRoceEnumAttributeTestCase()
        : TestCase("Enum attributes by name and by value")
    {
    }

  private:
    void DoRun() override
    {
        Ptr<MetaRoceSwitch> sw = CreateObject<MetaRoceSwitch>();
        StringValue name;
        sw->GetAttribute("BufferPreset", name);
        NS_TEST_ASSERT_MSG_EQ(name.Get(), "Shallow", "default BufferPreset");
        sw->SetAttribute("BufferPreset", StringValue("Deep"));
        sw->GetAttribute("BufferPreset", name);
        NS_TEST_ASSERT_MSG_EQ(name.Get(), "Deep", "BufferPreset set by name");
        sw->SetAttribute("BufferPreset", EnumValue(MetaRoceSwitch::SHALLOW));
        sw->GetAttribute("BufferPreset", name);
        NS_TEST_ASSERT_MSG_EQ(name.Get(), "Shallow", "BufferPreset set by value");
        NS_TEST_ASSERT_MSG_EQ(Choices(MetaRoceSwitch::GetTypeId(), "BufferPreset"),
                              "Shallow|Deep",
                              "BufferPreset choices");

        // Through a setter and a getter.
        Ptr<MetaRoceScheduler> scheduler = CreateObject<MetaRoceScheduler>();
        NS_TEST_ASSERT_MSG_EQ(scheduler->GetTieBreak(),
                              MetaRoceScheduler::INSERTION,
                              "default TieBreak");
        scheduler->SetAttribute("TieBreak", StringValue("Link"));
        NS_TEST_ASSERT_MSG_EQ(scheduler->GetTieBreak(),
                              MetaRoceScheduler::LINK,
                              "TieBreak set by name");
        scheduler->GetAttribute("TieBreak", name);
        NS_TEST_ASSERT_MSG_EQ(name.Get(), "Link", "TieBreak read by name");
    }
};

/**
 * \ingroup metaroce-tests
 * The NIC's policy attributes are EnumValues over the engine's one registry of policy names:
 * exactly the registry's names as choices, in its order, the engine's defaults, set and read by
 * name and by value, and an unknown name rejected when it is set.
 */
class MetaRoceNicPolicyAttributeTestCase : public TestCase
{
  public:
    MetaRoceNicPolicyAttributeTestCase()
        : TestCase("MetaRoceNic policy attributes are enums of the engine's policy names")
    {
    }

  private:
    void DoRun() override
    {
        using metaroce::PolicyKind;
        const metaroce::ConnectionConfig engine;

        struct Policy
        {
            std::string attribute;     //!< MetaRoceNic attribute
            PolicyKind kind;           //!< registry kind
            std::string engineDefault; //!< ConnectionConfig's default
        };

        const std::vector<Policy> policies = {
            {"Transport", PolicyKind::TRANSPORT, engine.transport},
            {"CongestionControl", PolicyKind::CONGESTION_CONTROL, engine.congestionControl},
            {"PathScheduler", PolicyKind::PATH_SCHEDULER, engine.pathScheduler},
            {"LossDetection", PolicyKind::LOSS_DETECTION, engine.lossDetection},
            {"RoceRecovery", PolicyKind::ROCE_RECOVERY, engine.rocev2.recovery},
            {"TailProbe", PolicyKind::TAIL_PROBE, engine.tailProbe},
            {"FailureDetection", PolicyKind::FAILURE_DETECTION, engine.failureDetection},
            {"RtoPolicy", PolicyKind::RTO_POLICY, engine.rtoPolicy},
            {"InitialWindow", PolicyKind::INITIAL_WINDOW, engine.initialWindow},
            {"AckPolicy", PolicyKind::ACK_POLICY, engine.ackPolicy},
            {"ReturnWindow", PolicyKind::RETURN_WINDOW, engine.returnWindow},
            {"ConfirmHold", PolicyKind::CONFIRM_HOLD, engine.confirmHold},
        };
        Ptr<MetaRoceNic> nic = CreateObject<MetaRoceNic>();
        StringValue name;
        for (const Policy& p : policies)
        {
            std::string registry;
            for (const std::string& n : metaroce::PolicyNames(p.kind))
            {
                registry += (registry.empty() ? "" : "|") + n;
            }
            NS_TEST_ASSERT_MSG_EQ(Choices(MetaRoceNic::GetTypeId(), p.attribute),
                                  registry,
                                  p.attribute + ": the registry's names, in its order");
            nic->GetAttribute(p.attribute, name);
            NS_TEST_ASSERT_MSG_EQ(name.Get(), p.engineDefault, p.attribute + ": engine default");
            for (const std::string& n : metaroce::PolicyNames(p.kind))
            {
                nic->SetAttribute(p.attribute, StringValue(n));
                nic->GetAttribute(p.attribute, name);
                NS_TEST_ASSERT_MSG_EQ(name.Get(), n, p.attribute + " set by name");
            }
            NS_TEST_ASSERT_MSG_EQ(nic->SetAttributeFailSafe(p.attribute, StringValue("cubic")),
                                  false,
                                  p.attribute + ": an unknown name is rejected");
            NS_TEST_ASSERT_MSG_EQ(nic->SetAttributeFailSafe(p.attribute, EnumValue(99)),
                                  false,
                                  p.attribute + ": a value beyond the choices is rejected");
        }

        // Each enumerator of MetaRoceNic names the policy it says (a registry reordered
        // without the enum fails here). Typed values: from ns-3.41 on, EnumValue is
        // EnumValue<T>, and an int is another type.
        auto byValue = [&](const std::string& attribute,
                           const AttributeValue& value,
                           const std::string& expected) {
            nic->SetAttribute(attribute, value);
            nic->GetAttribute(attribute, name);
            NS_TEST_ASSERT_MSG_EQ(name.Get(), expected, attribute + " set by value");
        };
        byValue("Transport", EnumValue(MetaRoceNic::TRANSPORT_METAROCE), "metaroce");
        byValue("Transport", EnumValue(MetaRoceNic::TRANSPORT_ROCEV2), "rocev2");
        byValue("CongestionControl", EnumValue(MetaRoceNic::CC_AIMD), "aimd");
        byValue("CongestionControl", EnumValue(MetaRoceNic::CC_FIXED), "fixed");
        byValue("CongestionControl", EnumValue(MetaRoceNic::CC_DCTCP), "dctcp");
        byValue("PathScheduler", EnumValue(MetaRoceNic::PATH_SCHEDULER_SPRAY), "spray");
        byValue("PathScheduler", EnumValue(MetaRoceNic::PATH_SCHEDULER_SINGLE), "single");
        byValue("LossDetection", EnumValue(MetaRoceNic::LOSS_DETECTION_SACK_GAP), "sack-gap");
        byValue("LossDetection", EnumValue(MetaRoceNic::LOSS_DETECTION_RACK), "rack");
        byValue("RoceRecovery", EnumValue(MetaRoceNic::ROCE_RECOVERY_GBN), "gbn");
        byValue("RoceRecovery", EnumValue(MetaRoceNic::ROCE_RECOVERY_IRN), "irn");
        byValue("TailProbe", EnumValue(MetaRoceNic::TAIL_PROBE_TLP), "tlp");
        byValue("TailProbe", EnumValue(MetaRoceNic::TAIL_PROBE_TLP_RTO), "tlp-rto");
        byValue("TailProbe", EnumValue(MetaRoceNic::TAIL_PROBE_NONE), "none");
        byValue("FailureDetection",
                EnumValue(MetaRoceNic::FAILURE_DETECTION_CROSS_PATH),
                "cross-path");
        byValue("FailureDetection", EnumValue(MetaRoceNic::FAILURE_DETECTION_RTO), "rto");
        byValue("RtoPolicy", EnumValue(MetaRoceNic::RTO_POLICY_ADAPTIVE), "adaptive");
        byValue("RtoPolicy", EnumValue(MetaRoceNic::RTO_POLICY_FIXED), "fixed");
        byValue("InitialWindow",
                EnumValue(MetaRoceNic::INITIAL_WINDOW_PER_CONNECTION),
                "per-connection");
        byValue("InitialWindow", EnumValue(MetaRoceNic::INITIAL_WINDOW_PER_PATH), "per-path");
        byValue("InitialWindow", EnumValue(MetaRoceNic::INITIAL_WINDOW_BDP), "bdp");
        byValue("AckPolicy", EnumValue(MetaRoceNic::ACK_POLICY_COALESCED), "coalesced");
        byValue("AckPolicy", EnumValue(MetaRoceNic::ACK_POLICY_PER_PATH), "per-path");
        byValue("ReturnWindow", EnumValue(MetaRoceNic::RETURN_WINDOW_SHARE), "share");
        byValue("ReturnWindow", EnumValue(MetaRoceNic::RETURN_WINDOW_INITIAL), "initial");
        byValue("ConfirmHold", EnumValue(MetaRoceNic::CONFIRM_HOLD_HOLD), "hold");
        byValue("ConfirmHold", EnumValue(MetaRoceNic::CONFIRM_HOLD_NONE), "none");
        const metaroce::ConnectionConfig& cfg = nic->GetDefaultConnectionConfig();
        NS_TEST_ASSERT_MSG_EQ(cfg.transport, "rocev2", "Transport reaches the engine");
        NS_TEST_ASSERT_MSG_EQ(cfg.congestionControl, "dctcp", "CongestionControl reaches it");
        NS_TEST_ASSERT_MSG_EQ(cfg.pathScheduler, "single", "PathScheduler reaches it");
        NS_TEST_ASSERT_MSG_EQ(cfg.rocev2.recovery, "irn", "RoceRecovery reaches it");
        NS_TEST_ASSERT_MSG_EQ(cfg.lossDetection, "rack", "LossDetection reaches it");
        NS_TEST_ASSERT_MSG_EQ(cfg.tailProbe, "none", "TailProbe reaches it");
        NS_TEST_ASSERT_MSG_EQ(cfg.rtoPolicy, "fixed", "RtoPolicy reaches it");

        // Program-wide defaults: a typo fails where it is given, by name or by value.
        NS_TEST_ASSERT_MSG_EQ(
            Config::SetDefaultFailSafe("ns3::MetaRoceNic::CongestionControl", StringValue("cubc")),
            false,
            "SetDefault rejects an unknown name");
        NS_TEST_ASSERT_MSG_EQ(Config::SetDefaultFailSafe("ns3::MetaRoceNic::CongestionControl",
                                                         EnumValue(MetaRoceNic::CC_FIXED)),
                              true,
                              "SetDefault by value");
        Ptr<MetaRoceNic> second = CreateObject<MetaRoceNic>();
        second->GetAttribute("CongestionControl", name);
        NS_TEST_ASSERT_MSG_EQ(name.Get(), "fixed", "the new default");
        NS_TEST_ASSERT_MSG_EQ(second->GetDefaultConnectionConfig().congestionControl,
                              "fixed",
                              "the new default reaches the engine");
        Config::SetDefault("ns3::MetaRoceNic::CongestionControl",
                           StringValue(engine.congestionControl));
    }
};

/**
 * \ingroup metaroce-tests
 * MetaRoceIsPending follows an event through scheduling, cancelling and running.
 */
class MetaRoceIsPendingTestCase : public TestCase
{
  public:
    MetaRoceIsPendingTestCase()
        : TestCase("MetaRoceIsPending (EventId::IsRunning or IsPending)")
    {
    }

  private:
    void DoRun() override
    {
        EventId empty;
        NS_TEST_ASSERT_MSG_EQ(MetaRoceIsPending(empty), false, "a default EventId");
        EventId ran = Simulator::Schedule(MicroSeconds(1), &MetaRoceIsPendingTestCase::Nop);
        EventId cancelled = Simulator::Schedule(MicroSeconds(2), &MetaRoceIsPendingTestCase::Nop);
        EventId later = Simulator::Schedule(MicroSeconds(5), &MetaRoceIsPendingTestCase::Nop);
        NS_TEST_ASSERT_MSG_EQ(MetaRoceIsPending(ran), true, "scheduled");
        cancelled.Cancel();
        NS_TEST_ASSERT_MSG_EQ(MetaRoceIsPending(cancelled), false, "cancelled");
        Simulator::Stop(MicroSeconds(3));
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(MetaRoceIsPending(ran), false, "ran");
        NS_TEST_ASSERT_MSG_EQ(MetaRoceIsPending(later), true, "not yet run");
        Simulator::Destroy();
    }

    static void Nop()
    {
    }
};

/**
 * \ingroup metaroce-tests
 * Unit tests of the metaroce model.
 */
class MetaRoceModelTestSuite : public TestSuite
{
  public:
    MetaRoceModelTestSuite()
        : TestSuite("metaroce-model", TestSuite::Type::UNIT)
    {
        AddTestCase(new MetaRoceEnumAttributeTestCase);
        AddTestCase(new MetaRoceNicPolicyAttributeTestCase);
        AddTestCase(new MetaRoceIsPendingTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceModelTestSuite g_metaRoceModelTestSuite;
