/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 unit tests of the model: enum attributes by name (the switch's, the scheduler's) and the
 * ns-3 API compatibility layer (metaroce-ns3-compat.h). They run in an ns-3 tree (./test.py -s
 * metaroce-model) and in the standalone build (ctest -L ns3).
 */

#include "ns3/enum.h"
#include "ns3/metaroce-ns3-compat.h"
#include "ns3/metaroce-scheduler.h"
#include "ns3/metaroce-switch.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"

#include <string>

using namespace ns3;

namespace
{
/**
 * The names an enum attribute accepts, as "a|b|c". (An unknown name is not set in these tests:
 * ns-3's EnumChecker asserts on it where asserts are on, and reads past its list where not.)
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
        AddTestCase(new MetaRoceIsPendingTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceModelTestSuite g_metaRoceModelTestSuite;
