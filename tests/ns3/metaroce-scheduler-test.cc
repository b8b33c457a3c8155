/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns3::MetaRoceScheduler: the same order as ns-3's MapScheduler under random inserts and
 * removals, Remove, the Link tie-break, and a simulation run on it.
 */

#include "ns3/enum.h"
#include "ns3/event-impl.h"
#include "ns3/make-event.h"
#include "ns3/map-scheduler.h"
#include "ns3/metaroce-scheduler.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <cstdint>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace
{

using namespace ns3;

void
Nothing()
{
}

/// Owns EventImpl objects for events handed to a scheduler directly (not through Simulator).
class EventPool
{
  public:
    ~EventPool()
    {
        for (EventImpl* impl : m_impls)
        {
            impl->Unref();
        }
    }

    /**
     * \param ts time stamp
     * \param uid unique id
     * \param context context
     * \return a scheduler event
     */
    Scheduler::Event Make(uint64_t ts, uint32_t uid, uint32_t context = 0)
    {
        Scheduler::Event ev;
        ev.impl = MakeEvent(&Nothing);
        m_impls.push_back(ev.impl);
        ev.key.m_ts = ts;
        ev.key.m_uid = uid;
        ev.key.m_context = context;
        return ev;
    }

  private:
    std::vector<EventImpl*> m_impls; //!< every event made
};

Ptr<MetaRoceScheduler>
MakeScheduler(MetaRoceScheduler::TieBreak tieBreak, int64_t bucketSteps = 0, uint32_t buckets = 64)
{
    Ptr<MetaRoceScheduler> s = CreateObject<MetaRoceScheduler>();
    s->SetAttribute("TieBreak", EnumValue(tieBreak));
    s->SetAttribute("BucketWidth", TimeValue(TimeStep(bucketSteps)));
    s->SetAttribute("Buckets", UintegerValue(buckets));
    return s;
}

/// Scheduler layouts: the heap alone, and buckets of 1, 4 and 64 time steps (narrow windows,
/// so that events also wait in the heap and the window slides and jumps).
class MetaRoceSchedulerLayoutTest : public ::testing::TestWithParam<std::pair<int64_t, uint32_t>>
{
};

TEST_P(MetaRoceSchedulerLayoutTest, SameOrderAsMapSchedulerUnderRandomInsertsAndRemovals)
{
    EventPool pool;
    Ptr<MetaRoceScheduler> ours =
        MakeScheduler(MetaRoceScheduler::INSERTION, GetParam().first, GetParam().second);
    Ptr<MapScheduler> map = CreateObject<MapScheduler>();
    std::mt19937_64 rng(11);
    uint64_t now = 0;
    uint32_t uid = 3;
    uint64_t removed = 0;
    std::vector<Scheduler::Event> live;
    for (int step = 0; step < 200000; ++step)
    {
        const int what = int(rng() % 10);
        if (what < 5 || map->IsEmpty())
        {
            // Few distinct offsets, so that many events share a time stamp.
            // Also, now and then, far ahead (beyond the buckets) or at the current time.
            const uint64_t far = rng() % 50 == 0 ? 20000 + rng() % 100000 : 0;
            const uint64_t ts = now + far + (rng() % 4) * 500 + (rng() % 3 == 0 ? rng() % 7 : 0);
            const Scheduler::Event ev = pool.Make(ts, uid++, uint32_t(rng() % 16));
            ours->Insert(ev);
            map->Insert(ev);
            live.push_back(ev);
        }
        else if (what < 9)
        {
            ASSERT_FALSE(ours->IsEmpty());
            EXPECT_EQ(ours->PeekNext().key.m_uid, map->PeekNext().key.m_uid);
            const Scheduler::Event a = ours->RemoveNext();
            const Scheduler::Event b = map->RemoveNext();
            ASSERT_EQ(a.key.m_uid, b.key.m_uid) << "step " << step;
            EXPECT_EQ(a.key.m_ts, b.key.m_ts);
            EXPECT_EQ(a.key.m_context, b.key.m_context);
            EXPECT_EQ(a.impl, b.impl);
            now = a.key.m_ts;
            ++removed;
        }
        else if (!live.empty())
        {
            // Simulator::Remove of a random pending event (it may already have run: skip it).
            const std::size_t i = rng() % live.size();
            const Scheduler::Event ev = live[i];
            live[i] = live.back();
            live.pop_back();
            if (ev.key.m_ts >= now && !map->IsEmpty() && ev.key.m_ts > map->PeekNext().key.m_ts)
            {
                ours->Remove(ev);
                map->Remove(ev);
            }
        }
    }
    EXPECT_GT(removed, 50000U);
    while (!map->IsEmpty())
    {
        ASSERT_FALSE(ours->IsEmpty());
        EXPECT_EQ(ours->RemoveNext().key.m_uid, map->RemoveNext().key.m_uid);
    }
    EXPECT_TRUE(ours->IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Layouts,
                         MetaRoceSchedulerLayoutTest,
                         ::testing::Values(std::make_pair(int64_t(0), 64U),
                                           std::make_pair(int64_t(1), 64U),
                                           std::make_pair(int64_t(4), 64U),
                                           std::make_pair(int64_t(64), 128U)));

TEST(MetaRoceSchedulerTest, LinkTieBreakRunsUntaggedFirstThenArrivalsByLink)
{
    EventPool pool;
    Ptr<MetaRoceScheduler> s = MakeScheduler(MetaRoceScheduler::LINK);
    MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(7, 1));
    s->Insert(pool.Make(100, 3));
    s->Insert(pool.Make(100, 4));
    MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(2, 0));
    s->Insert(pool.Make(100, 5));
    s->Insert(pool.Make(50, 6));
    MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(2, 1));
    s->Insert(pool.Make(100, 7));
    s->Insert(pool.Make(100, 8));
    std::vector<uint32_t> order;
    while (!s->IsEmpty())
    {
        order.push_back(s->RemoveNext().key.m_uid);
    }
    // 6 is earlier; at 100: untagged 4 and 8 by uid, then links 2/0, 2/1, 7/1.
    EXPECT_EQ(order, (std::vector<uint32_t>{6, 4, 8, 5, 7, 3}));
}

TEST(MetaRoceSchedulerTest, InsertionTieBreakIgnoresTagsAndATagIsUsedOnce)
{
    EventPool pool;
    Ptr<MetaRoceScheduler> s = MakeScheduler(MetaRoceScheduler::INSERTION);
    MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(9, 0));
    s->Insert(pool.Make(10, 3));
    s->Insert(pool.Make(10, 4));
    EXPECT_EQ(s->RemoveNext().key.m_uid, 3U);
    EXPECT_EQ(s->RemoveNext().key.m_uid, 4U);

    Ptr<MetaRoceScheduler> link = MakeScheduler(MetaRoceScheduler::LINK);
    MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(9, 0));
    link->Insert(pool.Make(10, 5)); // tagged
    link->Insert(pool.Make(10, 6)); // the tag was consumed: untagged, so it runs first
    EXPECT_EQ(link->RemoveNext().key.m_uid, 6U);
    EXPECT_EQ(link->RemoveNext().key.m_uid, 5U);
    // A remote channel re-schedules arrivals only while a Link scheduler exists.
    EXPECT_TRUE(MetaRoceScheduler::LinkTieBreakInUse());
    link->SetAttribute("TieBreak", EnumValue(MetaRoceScheduler::INSERTION));
    EXPECT_FALSE(MetaRoceScheduler::LinkTieBreakInUse());
    link->SetAttribute("TieBreak", EnumValue(MetaRoceScheduler::LINK));
    EXPECT_TRUE(MetaRoceScheduler::LinkTieBreakInUse());
    link = nullptr;
    EXPECT_FALSE(MetaRoceScheduler::LinkTieBreakInUse());
    EXPECT_NE(MetaRoceScheduler::LinkTag(1, 0), MetaRoceScheduler::LinkTag(0, 1));
    EXPECT_NE(MetaRoceScheduler::LinkTag(0, 0), 0U) << "0 means untagged";
}

/// Records the time and id of each event it runs.
std::vector<std::pair<int64_t, int>> g_ran;

void
Record(int id)
{
    g_ran.emplace_back(Simulator::Now().GetNanoSeconds(), id);
}

/// Run the Simulator on a MetaRoceScheduler with 16 ns buckets, and forget earlier runs.
void
UseMetaRoceScheduler()
{
    ObjectFactory factory;
    factory.SetTypeId("ns3::MetaRoceScheduler");
    factory.Set("BucketWidth", TimeValue(NanoSeconds(16)));
    Simulator::SetScheduler(factory);
    g_ran.clear();
}

TEST(MetaRoceSchedulerTest, DrivesTheSimulatorIncludingCancelAndRemove)
{
    UseMetaRoceScheduler();
    std::vector<EventId> ids;
    for (int i = 0; i < 1000; ++i)
    {
        ids.push_back(Simulator::Schedule(NanoSeconds((i * 7919) % 300), &Record, i));
    }
    Simulator::Cancel(ids[10]);
    Simulator::Remove(ids[20]);
    Simulator::Run();
    Simulator::Destroy();
    ASSERT_EQ(g_ran.size(), 998U);
    for (std::size_t i = 1; i < g_ran.size(); ++i)
    {
        // Time order, and insertion order among equal times.
        ASSERT_TRUE(g_ran[i - 1].first < g_ran[i].first ||
                    (g_ran[i - 1].first == g_ran[i].first && g_ran[i - 1].second < g_ran[i].second))
            << i;
    }
    for (const auto& [t, id] : g_ran)
    {
        EXPECT_NE(id, 10);
        EXPECT_NE(id, 20);
    }
}

/// Prefetch() calls seen: (event id, number of events run before the call).
std::vector<std::pair<int, std::size_t>> g_prefetched;

/// An event that records its Prefetch() calls and its run.
class CountingEvent : public MetaRocePrefetchEvent
{
  public:
    /// \param id the event's id
    explicit CountingEvent(int id)
        : m_id(id)
    {
    }

    void Prefetch() const override
    {
        g_prefetched.emplace_back(m_id, g_ran.size());
    }

  protected:
    void Notify() override
    {
        Record(m_id);
    }

  private:
    int m_id; //!< the event's id
};

TEST(MetaRoceSchedulerTest, OnlyAnnouncedEventsArePrefetchedJustBeforeTheyRun)
{
    UseMetaRoceScheduler();
    g_prefetched.clear();
    // Ten events in one bucket; the even ones are announced.
    for (int id = 0; id < 10; ++id)
    {
        Ptr<CountingEvent> event = Create<CountingEvent>(id);
        if (id % 2 == 0)
        {
            MetaRoceScheduler::AnnounceNextEvent(PeekPointer(event));
        }
        Simulator::Schedule(NanoSeconds(1 + id), event);
    }
    // An announcement that is not followed by its event must not mark the next one (a plain
    // event, which has no Prefetch).
    Ptr<CountingEvent> never = Create<CountingEvent>(99);
    MetaRoceScheduler::AnnounceNextEvent(PeekPointer(never));
    Simulator::Schedule(NanoSeconds(12), &Record, 100);
    Simulator::Run();
    Simulator::Destroy();
    ASSERT_EQ(g_ran.size(), 11U);
    // Event 0 runs first, with nothing before it to prefetch it; each later even event is
    // prefetched once, when the event before it leaves the queue.
    const std::vector<std::pair<int, std::size_t>> expected{{2, 1}, {4, 3}, {6, 5}, {8, 7}};
    EXPECT_EQ(g_prefetched, expected);
}

/// Schedules event 50 at 100 ns in the place reserved by \p reservation (if it has not passed).
void
ScheduleReserved(uint64_t reservation)
{
    EXPECT_FALSE(MetaRoceScheduler::HasPassed(NanoSeconds(100).GetTimeStep(), reservation));
    MetaRoceScheduler::UseReservedOrder(reservation);
    Simulator::Schedule(NanoSeconds(100) - Simulator::Now(), &Record, 50);
}

// Issue 20: an event scheduled later in a place reserved earlier runs where it would have run
// had it been scheduled at the reservation: after the events of its time scheduled before the
// reservation, before those scheduled after it, and a passed reservation says so.
TEST(MetaRoceSchedulerTest, AReservedPlaceOrdersAnEventAsIfScheduledThen)
{
    UseMetaRoceScheduler();
    Simulator::Schedule(NanoSeconds(100), &Record, 1);
    const uint64_t reservation = MetaRoceScheduler::ReserveOrder();
    const uint64_t unused = MetaRoceScheduler::ReserveOrder();
    ASSERT_NE(reservation, 0U);
    ASSERT_LT(reservation, unused);
    Simulator::Schedule(NanoSeconds(100), &Record, 2);
    Simulator::Schedule(NanoSeconds(40), &ScheduleReserved, reservation);
    Simulator::Schedule(NanoSeconds(100), &Record, 3);
    Simulator::Run();
    EXPECT_TRUE(MetaRoceScheduler::HasPassed(NanoSeconds(100).GetTimeStep(), unused));
    Simulator::Destroy();
    const std::vector<std::pair<int64_t, int>> expected{{100, 1}, {100, 50}, {100, 2}, {100, 3}};
    EXPECT_EQ(g_ran, expected);
    // Another scheduler cannot honour a reservation.
    ObjectFactory factory;
    factory.SetTypeId("ns3::MapScheduler");
    Simulator::SetScheduler(factory);
    EXPECT_EQ(MetaRoceScheduler::ReserveOrder(), 0U);
    Simulator::Destroy();
}

} // namespace
