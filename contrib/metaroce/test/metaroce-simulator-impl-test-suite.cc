/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 unit tests of ns3::MetaRoceSimulatorImpl: every Simulator call gives what
 * ns3::DefaultSimulatorImpl gives (times, contexts, uids, expiry, cancellation, removal,
 * destroy events, Stop, a second Run, events from another thread), with ns-3's MapScheduler and
 * with MetaRoceScheduler; the fast paths follow the implementation in use. They run in an ns-3
 * tree (./test.py -s metaroce-simulator-impl) and in the standalone build
 * (ctest -R ns3-suite.metaroce-simulator-impl).
 */

#include "ns3/event-id.h"
#include "ns3/make-event.h"
#include "ns3/metaroce-simulator-impl.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"
#include "ns3/simulator-impl.h"
#include "ns3/simulator.h"
#include "ns3/test.h"

#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace ns3;

namespace
{

/**
 * A scripted run that exercises the Simulator API and writes down what every call returned,
 * so that two implementations can be compared line by line.
 */
class ApiScript
{
  public:
    /// \return the trace of a run on the current simulator implementation
    std::vector<std::string> Run()
    {
        // Before Run: every kind of schedule.
        m_a = Simulator::Schedule(NanoSeconds(10), &ApiScript::EventA, this);
        m_b = Simulator::Schedule(NanoSeconds(10), &ApiScript::EventB, this);
        Simulator::ScheduleWithContext(3, NanoSeconds(5), &ApiScript::Note, this, "C");
        Simulator::ScheduleNow(&ApiScript::Note, this, "D");
        m_e = Simulator::ScheduleDestroy(&ApiScript::Note, this, "E destroy");
        m_f = Simulator::ScheduleDestroy(&ApiScript::Note, this, "F destroy (removed)");
        m_g = Simulator::Schedule(NanoSeconds(20), &ApiScript::Note, this, "G (cancelled)");
        m_h = Simulator::Schedule(NanoSeconds(20), &ApiScript::Note, this, "H (removed)");
        Simulator::Schedule(NanoSeconds(50), &ApiScript::Tick, this, 0U);
        Id("a", m_a);
        Id("b", m_b);
        Id("e", m_e);
        Id("g", m_g);
        Simulator::Stop(NanoSeconds(400));
        Simulator::Run();
        Line("after run 1: finished=" + std::to_string(Simulator::IsFinished()) +
             " count=" + std::to_string(Simulator::GetEventCount()));
        // Stop leaves events behind; a second Run goes on from there.
        Simulator::Stop(NanoSeconds(300));
        Simulator::Run();
        Line("after run 2: finished=" + std::to_string(Simulator::IsFinished()) +
             " count=" + std::to_string(Simulator::GetEventCount()));
        Simulator::Destroy(); // runs E (Line would make a new implementation after it)
        m_trace.emplace_back("destroyed");
        return m_trace;
    }

  private:
    void Line(const std::string& what)
    {
        std::ostringstream s;
        s << Simulator::Now().GetTimeStep() << " ctx=" << Simulator::GetContext() << " " << what;
        m_trace.push_back(s.str());
    }

    void Id(const std::string& name, const EventId& id)
    {
        std::ostringstream s;
        s << "id " << name << ": ts=" << id.GetTs() << " uid=" << id.GetUid()
          << " ctx=" << id.GetContext() << " expired=" << Simulator::IsExpired(id)
          << " left=" << Simulator::GetDelayLeft(id).GetTimeStep();
        Line(s.str());
    }

    void Note(std::string what)
    {
        Line(what);
    }

    void EventA()
    {
        Line("A");
        Id("a (running)", m_a);
        Id("b (same time, later)", m_b);
        Simulator::Cancel(m_g);
        Simulator::Remove(m_h);
        Simulator::Remove(m_f);
        Id("g", m_g);
        Id("h", m_h);
        Id("e", m_e);
        Id("f", m_f);
        Simulator::ScheduleNow(&ApiScript::Note, this, "I (now)");
        Simulator::ScheduleWithContext(9, NanoSeconds(3), &ApiScript::Note, this, "J");
        Id("now", Simulator::ScheduleNow(&ApiScript::Note, this, "K (now)"));
    }

    void EventB()
    {
        Line("B");
        // Another thread schedules: the event is inserted before the next event runs.
        std::thread other(
            []() { Simulator::ScheduleWithContext(7, NanoSeconds(2), &ApiScript::Foreign); });
        other.join();
        Id("a (ran)", m_a);
    }

    static void Foreign()
    {
        std::ostringstream s;
        s << Simulator::Now().GetTimeStep() << " ctx=" << Simulator::GetContext() << " foreign";
        s_foreign.push_back(s.str());
    }

    void Tick(uint32_t n)
    {
        Line("tick " + std::to_string(n));
        if (n < 20)
        {
            // Two events at the same time: their order is their uid order.
            Simulator::Schedule(NanoSeconds(30), &ApiScript::Tick, this, n + 1);
            Simulator::Schedule(NanoSeconds(30), &ApiScript::Note, this, "tock");
        }
    }

    EventId m_a;                      //!< event A
    EventId m_b;                      //!< event B
    EventId m_e;                      //!< destroy event E
    EventId m_f;                      //!< destroy event F, removed
    EventId m_g;                      //!< event G, cancelled
    EventId m_h;                      //!< event H, removed
    std::vector<std::string> m_trace; //!< the trace

  public:
    static std::vector<std::string> s_foreign; //!< what the other thread's event saw
};

std::vector<std::string> ApiScript::s_foreign;

/**
 * \param simulator a SimulatorImpl type name
 * \param scheduler a Scheduler type name
 * \return the trace of ApiScript on them, with the foreign event's line appended
 */
std::vector<std::string>
Trace(const std::string& simulator, const std::string& scheduler)
{
    ObjectFactory impl;
    impl.SetTypeId(simulator);
    Simulator::SetImplementation(impl.Create<SimulatorImpl>());
    ObjectFactory sched;
    sched.SetTypeId(scheduler);
    Simulator::SetScheduler(sched);
    ApiScript::s_foreign.clear();
    ApiScript script;
    std::vector<std::string> trace = script.Run();
    trace.insert(trace.end(), ApiScript::s_foreign.begin(), ApiScript::s_foreign.end());
    return trace;
}

} // namespace

/**
 * \ingroup metaroce-tests
 * MetaRoceSimulatorImpl answers every Simulator call as DefaultSimulatorImpl does.
 */
class MetaRoceSimulatorImplApiTestCase : public TestCase
{
  public:
    MetaRoceSimulatorImplApiTestCase()
        : TestCase("every Simulator call as with DefaultSimulatorImpl")
    {
    }

  private:
    void DoRun() override
    {
        Simulator::Destroy(); // nothing left over from another test
        const std::vector<std::string> reference =
            Trace("ns3::DefaultSimulatorImpl", "ns3::MapScheduler");
        // The script must have done what it is for, or the comparison proves little.
        NS_TEST_ASSERT_MSG_GT(reference.size(), 60U, "trace too short");
        std::string all;
        for (const std::string& line : reference)
        {
            all += line + "\n";
        }
        for (const char* seen : {"E destroy",
                                 "foreign",
                                 "tick 20",
                                 "after run 2",
                                 "expired=1",
                                 "expired=0",
                                 "ctx=9 J",
                                 "ctx=3 C"})
        {
            NS_TEST_EXPECT_MSG_NE(all.find(seen), std::string::npos, "missing: " << seen);
        }
        NS_TEST_EXPECT_MSG_EQ(all.find("(cancelled)"), std::string::npos, "G ran");
        NS_TEST_EXPECT_MSG_EQ(all.find("(removed)"), std::string::npos, "H or F ran");
        for (const char* scheduler : {"ns3::MapScheduler", "ns3::MetaRoceScheduler"})
        {
            const std::vector<std::string> trace = Trace("ns3::MetaRoceSimulatorImpl", scheduler);
            NS_TEST_ASSERT_MSG_EQ(trace.size(), reference.size(), scheduler);
            for (std::size_t i = 0; i < trace.size(); ++i)
            {
                NS_TEST_EXPECT_MSG_EQ(trace[i], reference[i], scheduler << " line " << i);
            }
        }
    }
};

/**
 * \ingroup metaroce-tests
 * The fast paths (Active, NowSteps, ScheduleSteps, MetaRoceNowSteps) follow the implementation
 * in use and fall back to Simulator's calls with another one.
 */
class MetaRoceSimulatorImplFastPathTestCase : public TestCase
{
  public:
    MetaRoceSimulatorImplFastPathTestCase()
        : TestCase("fast paths follow the implementation in use")
    {
    }

  private:
    static void Check(std::vector<std::string>* log)
    {
        std::ostringstream s;
        s << Simulator::Now().GetTimeStep() << "/" << MetaRoceNowSteps() << "/"
          << Simulator::GetContext();
        log->push_back(s.str());
    }

    void DoRun() override
    {
        Simulator::Destroy(); // nothing left over from another test
        NS_TEST_EXPECT_MSG_EQ(MetaRoceSimulatorImpl::Active(), nullptr, "none before");
        ObjectFactory impl;
        impl.SetTypeId("ns3::MetaRoceSimulatorImpl");
        Simulator::SetImplementation(impl.Create<SimulatorImpl>());
        MetaRoceSimulatorImpl* sim = MetaRoceSimulatorImpl::Active();
        NS_TEST_ASSERT_MSG_NE(sim, nullptr, "in use");
        std::vector<std::string> log;
        Simulator::ScheduleWithContext(4, NanoSeconds(7), &Check, &log);
        // A fast-path event at the same time, scheduled later, runs after it; its context is the
        // running one (none, before Run).
        sim->ScheduleSteps(NanoSeconds(7).GetTimeStep(), MakeEvent(&Check, &log));
        sim->ScheduleStepsWithContext(5, NanoSeconds(3).GetTimeStep(), MakeEvent(&Check, &log));
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(sim->NowSteps(), uint64_t(NanoSeconds(7).GetTimeStep()), "now");
        NS_TEST_EXPECT_MSG_EQ(Simulator::GetEventCount(), 3U, "events");
        Simulator::Destroy();
        NS_TEST_EXPECT_MSG_EQ(MetaRoceSimulatorImpl::Active(), nullptr, "none after Destroy");
        NS_TEST_ASSERT_MSG_EQ(log.size(), 3U, "events run");
        const std::string t3 = std::to_string(NanoSeconds(3).GetTimeStep());
        const std::string t7 = std::to_string(NanoSeconds(7).GetTimeStep());
        NS_TEST_EXPECT_MSG_EQ(log[0], t3 + "/" + t3 + "/5", "first");
        NS_TEST_EXPECT_MSG_EQ(log[1], t7 + "/" + t7 + "/4", "second");
        NS_TEST_EXPECT_MSG_EQ(log[2],
                              t7 + "/" + t7 + "/" + std::to_string(Simulator::NO_CONTEXT),
                              "third");

        // With DefaultSimulatorImpl the helpers fall back to Simulator::Now().
        impl.SetTypeId("ns3::DefaultSimulatorImpl");
        Simulator::SetImplementation(impl.Create<SimulatorImpl>());
        NS_TEST_EXPECT_MSG_EQ(MetaRoceSimulatorImpl::Active(), nullptr, "not in use");
        log.clear();
        Simulator::Schedule(NanoSeconds(9), &Check, &log);
        Simulator::Run();
        Simulator::Destroy();
        const std::string t9 = std::to_string(NanoSeconds(9).GetTimeStep());
        NS_TEST_ASSERT_MSG_EQ(log.size(), 1U, "event run");
        NS_TEST_EXPECT_MSG_EQ(log[0].substr(0, 2 * t9.size() + 1), t9 + "/" + t9, "fallback");
    }
};

/**
 * \ingroup metaroce-tests
 * Unit tests of ns3::MetaRoceSimulatorImpl.
 */
class MetaRoceSimulatorImplTestSuite : public TestSuite
{
  public:
    MetaRoceSimulatorImplTestSuite()
        : TestSuite("metaroce-simulator-impl", TestSuite::Type::UNIT)
    {
        AddTestCase(new MetaRoceSimulatorImplApiTestCase);
        AddTestCase(new MetaRoceSimulatorImplFastPathTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceSimulatorImplTestSuite g_metaRoceSimulatorImplTestSuite;
