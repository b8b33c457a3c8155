/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The timer table keeps its slots and its earliest deadline (metaroce-timer-table.h).

#include "metaroce-timer-table.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <random>

namespace metaroce
{
namespace test
{
namespace
{

constexpr uint32_t PATHS = 128;
constexpr uint32_t PATH_SLOTS = uint32_t(RequesterPathTimer::COUNT);
constexpr uint32_t CONNECTION_SLOTS = uint32_t(RequesterTimer::COUNT);

/// \return the earliest deadline of \p t, by looking at every slot.
Time
ScanEarliest(const RequesterTimers& t)
{
    Time earliest = TIME_INFINITE;
    for (uint32_t c = 0; c < CONNECTION_SLOTS; ++c)
    {
        earliest = std::min(earliest, t.Get(RequesterTimer(c)));
    }
    for (uint32_t p = 0; p < PATHS; ++p)
    {
        for (uint32_t s = 0; s < PATH_SLOTS; ++s)
        {
            earliest = std::min(earliest, t.Get(p, RequesterPathTimer(s)));
        }
    }
    return earliest;
}

TEST(TimerTableTest, StartsUnarmed)
{
    RequesterTimers t(PATHS);
    EXPECT_EQ(t.Earliest(), TIME_INFINITE);
    EXPECT_FALSE(t.Armed(5, RequesterPathTimer::RTO));
    EXPECT_FALSE(t.Armed(RequesterTimer::TAIL_PROBE));
}

TEST(TimerTableTest, SlotsAreIndependentAndNamed)
{
    RequesterTimers t(4);
    t.Set(0, RequesterPathTimer::RTO, 10);
    t.Set(0, RequesterPathTimer::LOSS, 20);
    t.Set(3, RequesterPathTimer::PROBE, 30);
    t.Set(RequesterTimer::TAIL_PROBE, 40);
    EXPECT_EQ(t.Get(0, RequesterPathTimer::RTO), 10);
    EXPECT_EQ(t.Get(0, RequesterPathTimer::LOSS), 20);
    EXPECT_EQ(t.Get(3, RequesterPathTimer::PROBE), 30);
    EXPECT_EQ(t.Get(RequesterTimer::TAIL_PROBE), 40);
    EXPECT_FALSE(t.Armed(1, RequesterPathTimer::RTO));
    EXPECT_FALSE(t.Armed(3, RequesterPathTimer::RTO));
    EXPECT_FALSE(t.Armed(RequesterTimer::RNR));
}

TEST(TimerTableTest, EarliestFollowsTheHolderMovingLater)
{
    RequesterTimers t(4);
    t.Set(2, RequesterPathTimer::RTO, 100);
    t.Set(1, RequesterPathTimer::LOSS, 50);
    t.Set(RequesterTimer::CONNECTION, 70);
    EXPECT_EQ(t.Earliest(), 50);
    t.Set(1, RequesterPathTimer::LOSS, 200); // the holder moves later
    EXPECT_EQ(t.Earliest(), 70);
    t.Clear(RequesterTimer::CONNECTION);
    EXPECT_EQ(t.Earliest(), 100);
    t.Set(3, RequesterPathTimer::PROBE, 100); // a tie
    t.Clear(3, RequesterPathTimer::PROBE);
    EXPECT_EQ(t.Earliest(), 100);
    t.ClearAll();
    EXPECT_EQ(t.Earliest(), TIME_INFINITE);
    EXPECT_FALSE(t.Armed(2, RequesterPathTimer::RTO));
}

TEST(TimerTableTest, EarliestMatchesAScanUnderRandomUpdates)
{
    // Mostly re-arming later (as RTO and LOSS are on every ACK), sometimes earlier, sometimes
    // clearing; Earliest() is checked against a scan after every update.
    std::mt19937_64 rng(7);
    RequesterTimers t(PATHS);
    std::vector<Time> model(CONNECTION_SLOTS + PATHS * PATH_SLOTS, TIME_INFINITE);
    Time now = 0;
    for (int i = 0; i < 200000; ++i)
    {
        now += Time(rng() % 50);
        uint32_t pick = uint32_t(rng() % model.size());
        uint32_t kind = uint32_t(rng() % 10);
        Time at = kind == 0 ? TIME_INFINITE : now + Time(rng() % (kind < 8 ? 5000 : 50));
        if (pick < CONNECTION_SLOTS)
        {
            t.Set(RequesterTimer(pick), at);
        }
        else
        {
            uint32_t p = (pick - CONNECTION_SLOTS) / PATH_SLOTS;
            t.Set(p, RequesterPathTimer((pick - CONNECTION_SLOTS) % PATH_SLOTS), at);
        }
        model[pick] = at;
        Time expected = *std::min_element(model.begin(), model.end());
        ASSERT_EQ(ScanEarliest(t), expected) << "update " << i;
        if (rng() % 4 == 0) // (not after every update: a stale minimum must take updates too)
        {
            ASSERT_EQ(t.Earliest(), expected) << "update " << i;
        }
        if (i % 50000 == 49999)
        {
            t.ClearAll();
            std::fill(model.begin(), model.end(), TIME_INFINITE);
            ASSERT_EQ(t.Earliest(), TIME_INFINITE);
        }
    }
}

TEST(TimerTableTest, ResponderTableHasOneAckSlotPerPathAndOneForTheConnection)
{
    ResponderTimers t(8);
    t.Set(7, ResponderPathTimer::ACK, 5);
    t.Set(ResponderTimer::ACK, 3);
    EXPECT_EQ(t.Earliest(), 3);
    t.Clear(ResponderTimer::ACK);
    EXPECT_EQ(t.Earliest(), 5);
    EXPECT_EQ(t.HeapBytes(), (8 + 1) * sizeof(Time));
}

} // namespace
} // namespace test
} // namespace metaroce
