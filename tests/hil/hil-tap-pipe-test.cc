/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The mixed-run fabric's batched TAP frame path (TapFramePipe), on a SOCK_SEQPACKET socket
// pair, which keeps frame boundaries as a TAP does.

#include "metaroce-hil-tap-pipe.h"

#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{

using metaroce::hil::TapFramePipe;

/// A socket pair: the pipe reads and writes end 0, the test plays the kernel on end 1.
class TapPipeTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, m_fds), 0);
    }

    void TearDown() override
    {
        for (int fd : m_fds)
        {
            if (fd >= 0)
            {
                close(fd);
            }
        }
    }

    /// Send frame \p i (its size and bytes derive from i) from the "kernel" side.
    void SendFrame(uint32_t i)
    {
        std::vector<uint8_t> f = Frame(i);
        ASSERT_EQ(send(m_fds[1], f.data(), f.size(), 0), ssize_t(f.size()));
    }

    static std::vector<uint8_t> Frame(uint32_t i)
    {
        std::vector<uint8_t> f(60 + (i * 37) % 1500);
        for (size_t k = 0; k < f.size(); ++k)
        {
            f[k] = uint8_t(i * 7 + k);
        }
        return f;
    }

    /// Wait (at most 10 s) until \p pred holds. \return whether it did.
    template <typename P>
    static bool WaitFor(P pred)
    {
        for (int i = 0; i < 10000; ++i)
        {
            if (pred())
            {
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return pred();
    }

    /// The wake-up (the reader thread's call): counted.
    std::function<void()> Wake()
    {
        return [this]() { m_wakes.fetch_add(1); };
    }

    int m_fds[2]{-1, -1};
    std::atomic<int> m_wakes{0};
};

TEST_F(TapPipeTest, HandsOverEveryFrameInOrderWithOneWakeUpPerBatch)
{
    TapFramePipe pipe(m_fds[0], TapFramePipe::DEFAULT_CAPACITY, Wake());
    std::string error;
    ASSERT_TRUE(pipe.Start(error)) << error;
    const uint32_t total = 500;
    uint32_t next = 0;
    int drains = 0;
    for (uint32_t i = 0; i < total; ++i)
    {
        SendFrame(i);
    }
    while (next < total)
    {
        ASSERT_TRUE(WaitFor([this, drains]() { return m_wakes > drains; })) << "no wake-up";
        EXPECT_EQ(m_wakes.load(), drains + 1) << "one wake-up until the consumer drains";
        ++drains;
        pipe.Drain([&next](uint8_t* f, uint32_t size, size_t) {
            EXPECT_EQ(std::vector<uint8_t>(f, f + size), Frame(next)) << "frame " << next;
            ++next;
        });
    }
    EXPECT_EQ(next, total);
    EXPECT_EQ(pipe.Pending(), 0u);
    pipe.Stop();
    const TapFramePipe::Counters c = pipe.GetCounters();
    EXPECT_EQ(c.read, total);
    EXPECT_EQ(c.queueDrops, 0u);
    EXPECT_EQ(c.wakeUps, uint64_t(drains));
    EXPECT_LT(drains, int(total)) << "frames read together are handed over together";
    EXPECT_EQ(pipe.ReaderError(), "");
}

TEST_F(TapPipeTest, AFullQueueDropsAndCountsAndSaysWhatIsPending)
{
    TapFramePipe pipe(m_fds[0], 4, Wake());
    std::string error;
    ASSERT_TRUE(pipe.Start(error)) << error;
    for (uint32_t i = 0; i < 10; ++i)
    {
        SendFrame(i);
    }
    // Nobody drains: 4 frames are kept, 6 dropped.
    ASSERT_TRUE(WaitFor([&pipe]() { return pipe.GetCounters().read == 10; }));
    EXPECT_EQ(pipe.Pending(), 4u);
    EXPECT_EQ(pipe.GetCounters().queueDrops, 6u);
    std::vector<size_t> left;
    std::vector<uint32_t> sizes;
    EXPECT_EQ(pipe.Drain([&](uint8_t*, uint32_t size, size_t after) {
        left.push_back(after);
        sizes.push_back(size);
    }),
              4u);
    EXPECT_EQ(left, (std::vector<size_t>{3, 2, 1, 0}));
    std::vector<uint32_t> first4;
    for (uint32_t i = 0; i < 4; ++i)
    {
        first4.push_back(uint32_t(Frame(i).size()));
    }
    EXPECT_EQ(sizes, first4) << "the oldest frames are kept";
    EXPECT_EQ(pipe.Pending(), 0u);
    // Room again: the next frame gets through, with a new wake-up.
    SendFrame(10);
    ASSERT_TRUE(WaitFor([this]() { return m_wakes >= 2; }));
    uint32_t got = 0;
    pipe.Drain([&got](uint8_t*, uint32_t size, size_t) { got = size; });
    EXPECT_EQ(got, Frame(10).size());
}

TEST_F(TapPipeTest, WritesFramesAndCountsRefusedOnes)
{
    TapFramePipe pipe(m_fds[0], TapFramePipe::DEFAULT_CAPACITY, Wake());
    std::vector<uint8_t> f = Frame(3);
    EXPECT_TRUE(pipe.Write(f.data(), uint32_t(f.size())));
    std::vector<uint8_t> in(4096);
    ASSERT_EQ(recv(m_fds[1], in.data(), in.size(), 0), ssize_t(f.size()));
    in.resize(f.size());
    EXPECT_EQ(in, f);
    // A descriptor that refuses writes (read-only): counted, not fatal.
    int ro = open("/dev/null", O_RDONLY);
    ASSERT_GE(ro, 0);
    TapFramePipe bad(ro, 8, Wake());
    EXPECT_FALSE(bad.Write(f.data(), uint32_t(f.size())));
    EXPECT_EQ(bad.GetCounters().writeErrors, 1u);
    EXPECT_EQ(bad.GetCounters().written, 0u);
    EXPECT_EQ(pipe.GetCounters().written, 1u);
    close(ro);
}

TEST_F(TapPipeTest, StopsWhileWaitingAndReportsAClosedDescriptor)
{
    {
        TapFramePipe pipe(m_fds[0], 8, Wake());
        std::string error;
        ASSERT_TRUE(pipe.Start(error)) << error;
        pipe.Stop(); // the reader waits in poll(): Stop must wake it (else this test hangs)
        pipe.Stop(); // twice is harmless
        EXPECT_EQ(pipe.ReaderError(), "");
    }
    TapFramePipe pipe(m_fds[0], 8, Wake());
    std::string error;
    ASSERT_TRUE(pipe.Start(error)) << error;
    SendFrame(1);
    close(m_fds[1]); // the other side goes away: read() returns 0
    m_fds[1] = -1;
    ASSERT_TRUE(WaitFor([&pipe]() { return !pipe.ReaderError().empty(); }));
    EXPECT_NE(pipe.ReaderError().find("closed"), std::string::npos) << pipe.ReaderError();
    size_t n = pipe.Drain([](uint8_t*, uint32_t, size_t) {});
    EXPECT_EQ(n, 1u) << "what was read before is still handed over";
    pipe.Stop();
}

TEST_F(TapPipeTest, ABadDescriptorIsAnErrorAtStart)
{
    TapFramePipe pipe(-1, 8, Wake());
    std::string error;
    EXPECT_FALSE(pipe.Start(error));
    EXPECT_NE(error.find("non-blocking"), std::string::npos) << error;
}

} // namespace
