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

#include <atomic>
#include <chrono>
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
        // Alone at its time: another thread's event counts its delay from here (35 ns), not
        // from the next event's time (50 ns).
        Simulator::Schedule(NanoSeconds(35), &ApiScript::SpawnForeign, this);
        // A scheduler change during the run, with events pending, and back.
        Simulator::Schedule(NanoSeconds(120),
                            &ApiScript::ChangeScheduler,
                            this,
                            "ns3::MapScheduler");
        Simulator::Schedule(NanoSeconds(260),
                            &ApiScript::ChangeScheduler,
                            this,
                            "ns3::MetaRoceScheduler");
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

    void SpawnForeign()
    {
        Line("spawn");
        std::thread other([]() {
            Simulator::ScheduleWithContext(6, NanoSeconds(2), &ApiScript::Foreign);
            Simulator::ScheduleWithContext(8, NanoSeconds(0), &ApiScript::Foreign);
        });
        other.join();
    }

    void ChangeScheduler(std::string type)
    {
        Line("scheduler " + type);
        ObjectFactory factory;
        factory.SetTypeId(type);
        Simulator::SetScheduler(factory);
    }

    static void Foreign()
    {
        std::ostringstream s;
        s << Simulator::Now().GetTimeStep() << " ctx=" << Simulator::GetContext() << " foreign";
        s_foreign.push_back(s.str());
        if (s_running != nullptr)
        {
            s_running->m_trace.push_back(s.str() + " (in order)");
        }
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
    static std::vector<std::string> s_foreign; //!< what the other thread's events saw
    static ApiScript* s_running;               //!< the script running, for Foreign
};

std::vector<std::string> ApiScript::s_foreign;
ApiScript* ApiScript::s_running = nullptr;

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
    ApiScript::s_running = &script;
    std::vector<std::string> trace = script.Run();
    ApiScript::s_running = nullptr;
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
        const std::string t37 = std::to_string(NanoSeconds(37).GetTimeStep());
        const std::string t35 = std::to_string(NanoSeconds(35).GetTimeStep());
        const std::vector<std::string> expected = {"E destroy",
                                                   t37 + " ctx=6 foreign (in order)",
                                                   t35 + " ctx=8 foreign (in order)",
                                                   "scheduler ns3::MapScheduler",
                                                   "tick 20",
                                                   "after run 2",
                                                   "expired=1",
                                                   "expired=0",
                                                   "ctx=9 J",
                                                   "ctx=3 C"};
        for (const std::string& seen : expected)
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

namespace
{

/// An event that counts the instances alive, to find events the simulator never releases.
class CountedEvent : public EventImpl
{
  public:
    CountedEvent()
    {
        ++s_alive;
    }

    ~CountedEvent() override
    {
        --s_alive;
    }

    static int s_alive; //!< instances alive
    static int s_runs;  //!< Notify calls

  protected:
    void Notify() override
    {
        ++s_runs;
    }
};

int CountedEvent::s_alive = 0;
int CountedEvent::s_runs = 0;

/**
 * Schedule counted events of every kind on \p simulator, run, destroy.
 * \param simulator a SimulatorImpl type name
 * \return "runs/alive after Destroy"
 */
std::string
CountedRun(const std::string& simulator)
{
    CountedEvent::s_alive = 0;
    CountedEvent::s_runs = 0;
    ObjectFactory impl;
    impl.SetTypeId(simulator);
    Simulator::SetImplementation(impl.Create<SimulatorImpl>());
    {
        std::vector<EventId> ids;
        for (int i = 0; i < 10; ++i)
        {
            ids.push_back(
                Simulator::Schedule(NanoSeconds(i), Ptr<EventImpl>(new CountedEvent, false)));
        }
        Simulator::Cancel(ids[2]);
        Simulator::Remove(ids[3]);
        Simulator::Remove(ids[3]); // twice: the second does nothing
        const EventId kept = Simulator::ScheduleDestroy(Ptr<EventImpl>(new CountedEvent, false));
        const EventId dropped = Simulator::ScheduleDestroy(Ptr<EventImpl>(new CountedEvent, false));
        Simulator::Remove(dropped);
        Simulator::ScheduleWithContext(1, NanoSeconds(3), new CountedEvent);
        Simulator::Stop(NanoSeconds(5)); // events at 6-9 ns are left pending at Destroy
        Simulator::Run();
    }
    Simulator::Destroy();
    return std::to_string(CountedEvent::s_runs) + "/" + std::to_string(CountedEvent::s_alive);
}

} // namespace

/**
 * \ingroup metaroce-tests
 * Every event is released: run, cancelled, removed, destroy events (run or removed) and the
 * events still pending at Destroy; the same runs as with DefaultSimulatorImpl.
 */
class MetaRoceSimulatorImplReleaseTestCase : public TestCase
{
  public:
    MetaRoceSimulatorImplReleaseTestCase()
        : TestCase("every event released, as with DefaultSimulatorImpl")
    {
    }

  private:
    void DoRun() override
    {
        Simulator::Destroy();
        const std::string reference = CountedRun("ns3::DefaultSimulatorImpl");
        NS_TEST_EXPECT_MSG_EQ(reference, "6/0", "DefaultSimulatorImpl");
        NS_TEST_EXPECT_MSG_EQ(CountedRun("ns3::MetaRoceSimulatorImpl"), reference, "ours");
    }
};

/**
 * \ingroup metaroce-tests
 * Active() is the implementation the Simulator uses, and no other: not one someone still
 * holds after Simulator::Destroy, not one that was never installed.
 */
class MetaRoceSimulatorImplActiveTestCase : public TestCase
{
  public:
    MetaRoceSimulatorImplActiveTestCase()
        : TestCase("Active() only while the Simulator uses the object")
    {
    }

  private:
    void DoRun() override
    {
        Simulator::Destroy();
        ObjectFactory factory;
        factory.SetTypeId("ns3::MetaRoceSimulatorImpl");
        Ptr<SimulatorImpl> held = factory.Create<SimulatorImpl>();
        NS_TEST_EXPECT_MSG_EQ(MetaRoceSimulatorImpl::Active(), nullptr, "made, not installed");
        Simulator::SetImplementation(held);
        NS_TEST_EXPECT_MSG_EQ(MetaRoceSimulatorImpl::Active(), PeekPointer(held), "installed");
        Simulator::Run();
        Simulator::Destroy();
        NS_TEST_EXPECT_MSG_EQ(MetaRoceSimulatorImpl::Active(), nullptr, "destroyed, still held");

        // Another implementation next: the old object, told to take a scheduler or to run,
        // does not become Active().
        factory.SetTypeId("ns3::DefaultSimulatorImpl");
        Simulator::SetImplementation(factory.Create<SimulatorImpl>());
        ObjectFactory scheduler;
        scheduler.SetTypeId("ns3::MapScheduler");
        held->SetScheduler(scheduler);
        held->Run();
        NS_TEST_EXPECT_MSG_EQ(MetaRoceSimulatorImpl::Active(), nullptr, "not in use");
        uint64_t seen = 0;
        Simulator::Schedule(NanoSeconds(4), [&seen]() { seen = MetaRoceNowSteps(); });
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(seen, uint64_t(NanoSeconds(4).GetTimeStep()), "the clock in use");
        Simulator::Destroy();
        held = nullptr;
        NS_TEST_EXPECT_MSG_EQ(MetaRoceSimulatorImpl::Active(), nullptr, "after all");
    }
};

/**
 * \ingroup metaroce-tests
 * ns3::MetaRoceRealtimeSimulatorImpl: events run no earlier than their time on the wall
 * clock, in order; another thread's event wakes an idle loop and is due at the wall-clock time
 * of its call; Run waits on an empty queue until Stop. (Lower bounds on the wall clock only:
 * a slow machine runs events later, never earlier.)
 */
class MetaRoceRealtimeSimulatorImplTestCase : public TestCase
{
  public:
    MetaRoceRealtimeSimulatorImplTestCase()
        : TestCase("the real-time mode paces on the wall clock and takes other threads' events")
    {
    }

  private:
    /// \return the wall clock since \p origin, as a simulation time
    static Time Since(std::chrono::steady_clock::time_point origin)
    {
        return NanoSeconds(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - origin)
                               .count());
    }

    void DoRun() override
    {
        Simulator::Destroy();
        ObjectFactory factory;
        factory.SetTypeId("ns3::MetaRoceRealtimeSimulatorImpl");
        Ptr<MetaRoceRealtimeSimulatorImpl> sim = factory.Create<MetaRoceRealtimeSimulatorImpl>();
        Simulator::SetImplementation(sim);

        // Before Run, from another thread: counted from the simulation's time, as ever.
        std::thread early([]() { Simulator::ScheduleWithContext(4, MilliSeconds(1), []() {}); });
        early.join();

        std::chrono::steady_clock::time_point origin;
        std::vector<Time> at;          // simulation time of each paced event
        std::vector<Time> wall;        // wall clock since Run when it ran
        std::vector<Time> realtime;    // sim->RealtimeNow() then
        Time foreignNow = Seconds(-1); // Now() in the other thread's event
        uint32_t foreignContext = 0;
        Time foreignScheduledAt; // wall clock (since Run) when the other thread scheduled
        Time foreignWall;        // wall clock (since Run) when its event ran
        std::thread other;
        std::thread stopper;
        std::atomic<bool> scheduled{false};
        Simulator::ScheduleNow([&]() {
            // Another thread, 15 ms later: its event wakes the loop, which has nothing to do
            // before 500 ms.
            other = std::thread([&]() {
                std::this_thread::sleep_for(std::chrono::milliseconds(15));
                foreignScheduledAt = sim->RealtimeNow(); // (the loop's own clock)
                Simulator::ScheduleWithContext(7, MilliSeconds(2), [&]() {
                    foreignNow = Simulator::Now();
                    foreignWall = Since(origin);
                    foreignContext = Simulator::GetContext();
                });
                scheduled = true;
            });
        });
        for (int ms : {10, 500, 500, 520})
        {
            Simulator::Schedule(MilliSeconds(ms), [&, ms]() {
                at.push_back(Simulator::Now());
                wall.push_back(Since(origin));
                realtime.push_back(sim->RealtimeNow());
                NS_TEST_EXPECT_MSG_EQ(Simulator::Now(), MilliSeconds(ms), "its own time");
            });
        }
        // Nothing after 530 ms: the loop waits on an empty queue for an event of another
        // thread, which stops the run.
        Simulator::Schedule(MilliSeconds(530), [&]() {
            other.join();
            stopper = std::thread([]() {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                Simulator::ScheduleWithContext(1, Seconds(0), []() { Simulator::Stop(); });
            });
        });
        // (The test's clock starts before Run's: "not before its time" holds in it whatever the
        // delay between the two.)
        origin = std::chrono::steady_clock::now();
        Simulator::Run();
        stopper.join();
        const Time stoppedAt = Simulator::Now();
        NS_TEST_EXPECT_MSG_EQ(at.size(), 4U, "every paced event ran");
        for (std::size_t i = 0; i < at.size(); ++i)
        {
            NS_TEST_EXPECT_MSG_GT_OR_EQ(wall[i], at[i], "not before its time, event " << i);
            NS_TEST_EXPECT_MSG_GT_OR_EQ(realtime[i], at[i], "RealtimeNow, event " << i);
        }
        NS_TEST_EXPECT_MSG_EQ(scheduled.load(), true, "the other thread scheduled");
        NS_TEST_EXPECT_MSG_EQ(foreignContext, 7U, "its context");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(foreignNow,
                                    foreignScheduledAt + MilliSeconds(2),
                                    "due at the wall-clock time of the call plus its delay");
        // It woke the loop, which would otherwise have slept until the 500 ms events (with a
        // wide margin: a machine would have to stall for 0.3 s to fail this).
        NS_TEST_EXPECT_MSG_LT(foreignWall, MilliSeconds(300), "it woke the loop");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(stoppedAt, MilliSeconds(550), "Run waited on an empty queue");
        Simulator::Destroy();
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
        AddTestCase(new MetaRoceSimulatorImplReleaseTestCase);
        AddTestCase(new MetaRoceSimulatorImplActiveTestCase);
        AddTestCase(new MetaRoceRealtimeSimulatorImplTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceSimulatorImplTestSuite g_metaRoceSimulatorImplTestSuite;
