/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Smoke test of the build: links the installed ns-3 core library and runs its event scheduler.
 */

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>
#include <vector>

namespace
{

/// One executed event: which one, and the simulation time it ran at.
struct Record
{
    int id;        //!< Event identifier given at scheduling time
    ns3::Time now; //!< Simulator::Now() inside the event
};

/// Destroys the simulator after each test, so that every test starts at time zero.
class Ns3LinkTest : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        ns3::Simulator::Destroy();
    }
};

TEST_F(Ns3LinkTest, EventsRunInTimeOrder)
{
    std::vector<Record> log;
    // ns-3.37 takes lambdas without arguments (a callable plus one argument means "member
    // function plus object"), so each event captures its identifier.
    auto record = [&log](int id) {
        return [&log, id]() { log.push_back({id, ns3::Simulator::Now()}); };
    };

    EXPECT_EQ(ns3::Simulator::Now(), ns3::Time(0));
    // Scheduled out of order; two share a timestamp and must run in scheduling order.
    ns3::Simulator::Schedule(ns3::MicroSeconds(30), record(3));
    ns3::Simulator::Schedule(ns3::MicroSeconds(10), record(1));
    ns3::Simulator::Schedule(ns3::MicroSeconds(20), record(2));
    ns3::Simulator::Schedule(ns3::MicroSeconds(10), record(11));
    ns3::Simulator::Run();

    ASSERT_EQ(log.size(), 4U);
    EXPECT_EQ(log[0].id, 1);
    EXPECT_EQ(log[0].now, ns3::MicroSeconds(10));
    EXPECT_EQ(log[1].id, 11);
    EXPECT_EQ(log[1].now, ns3::MicroSeconds(10));
    EXPECT_EQ(log[2].id, 2);
    EXPECT_EQ(log[2].now, ns3::MicroSeconds(20));
    EXPECT_EQ(log[3].id, 3);
    EXPECT_EQ(log[3].now, ns3::MicroSeconds(30));
    EXPECT_EQ(ns3::Simulator::Now(), ns3::MicroSeconds(30));
}

TEST_F(Ns3LinkTest, NestedScheduleCancelAndStop)
{
    std::vector<Record> log;
    auto record = [&log](int id) {
        return [&log, id]() { log.push_back({id, ns3::Simulator::Now()}); };
    };

    // An event that schedules a follow-up relative to its own time.
    ns3::Simulator::Schedule(ns3::NanoSeconds(500), [record]() {
        record(1)();
        ns3::Simulator::Schedule(ns3::NanoSeconds(250), record(2));
    });
    ns3::EventId cancelled = ns3::Simulator::Schedule(ns3::NanoSeconds(600), record(99));
    ns3::Simulator::Schedule(ns3::Seconds(2), record(98)); // after the stop time
    ns3::Simulator::Stop(ns3::Seconds(1));
    cancelled.Cancel();
    ns3::Simulator::Run();

    ASSERT_EQ(log.size(), 2U);
    EXPECT_EQ(log[0].id, 1);
    EXPECT_EQ(log[0].now, ns3::NanoSeconds(500));
    EXPECT_EQ(log[1].id, 2);
    EXPECT_EQ(log[1].now, ns3::NanoSeconds(750));
    EXPECT_EQ(ns3::Simulator::Now(), ns3::Seconds(1));
}

TEST_F(Ns3LinkTest, DestroyResetsTheClock)
{
    ns3::Simulator::Schedule(ns3::MilliSeconds(5), []() {});
    ns3::Simulator::Run();
    EXPECT_EQ(ns3::Simulator::Now(), ns3::MilliSeconds(5));

    ns3::Simulator::Destroy();
    EXPECT_EQ(ns3::Simulator::Now(), ns3::Time(0));
    EXPECT_TRUE(ns3::Simulator::IsFinished());
}

} // namespace
