/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// RDMA READ and atomics, what both engines must do alike (issue 17): exact bytes, the
// ibv_wc statuses IB defines for access, bounds, local protection and alignment errors, and
// the atomics' semantics. Run on RoCEv2 go-back-N, RoCEv2 IRN and MetaRoCE. The engines' own
// mechanisms are tested in rocev2-read-atomic-test.cc and metaroce-read-atomic-test.cc.

#include "read-atomic-fixture.h"

namespace metaroce
{
namespace test
{
namespace
{

TEST_P(ReadAtomicPair, SmallAndEmptyReads)
{
    Setup(ACCESS_REMOTE_READ);
    ASSERT_EQ(Read(1, 0, 1), PostStatus::OK);
    ASSERT_EQ(Read(2, 64, 0), PostStatus::OK);
    RunFor();
    const auto& c = m_net->Completions(m_a);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(c[1].status, WcStatus::SUCCESS);
    EXPECT_EQ(c[1].byteLen, 0u);
    EXPECT_EQ(m_src[0], m_remote[0]);
    EXPECT_NE(m_src[64], m_remote[64]) << "an empty READ reads nothing";
    EXPECT_EQ(ReadResponsesSent(m_b), 2u) << "one answer packet each";
    if (!MetaRoce())
    {
        EXPECT_EQ(Sent(m_b, RC_READ_RESPONSE_ONLY), 2u);
    }
}

TEST_P(ReadAtomicPair, ReadWithoutRemoteReadIsRemoteAccessErrorAndReadsNothing)
{
    Setup(ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
    std::vector<uint8_t> before = m_src;
    ASSERT_EQ(Read(1, 0, 3 * 4096), PostStatus::OK);
    ASSERT_EQ(Write(2, 100000, 64), PostStatus::OK);
    RunFor();
    const auto& c = m_net->Completions(m_a);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].wrId, 1u);
    EXPECT_EQ(c[0].status, WcStatus::REM_ACCESS_ERR);
    EXPECT_EQ(c[1].status, WcStatus::WR_FLUSH_ERR);
    EXPECT_EQ(m_src, before) << "nothing was read";
    EXPECT_EQ(ReadResponsesSent(m_b), 0u);
    EXPECT_GE(CounterB(Counter::RX_ACCESS_ERROR), 1u);
}

TEST_P(ReadAtomicPair, ReadOutOfBoundsFails)
{
    Setup(ACCESS_REMOTE_READ, 8192);
    ASSERT_EQ(Read(1, 4096, 8192), PostStatus::OK); // ends 4096 bytes past the region
    RunFor();
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::REM_ACCESS_ERR);
}

TEST_P(ReadAtomicPair, ReadIntoABufferWithoutLocalWriteIsLocalProtectionError)
{
    Setup(ACCESS_REMOTE_READ);
    std::vector<uint8_t> ro(4096, 0xEE);
    MemoryRegion mr = A().RegisterMemory(ro.data(), ro.size(), 0);
    SendWr wr;
    wr.wrId = 9;
    wr.opcode = WrOpcode::RDMA_READ;
    wr.sge = {mr.addr, 4096, mr.lkey};
    wr.remoteAddr = m_remoteMr.addr;
    wr.rkey = m_remoteMr.rkey;
    ASSERT_EQ(A().PostSend(m_net->Now(), m_qa, wr), PostStatus::OK);
    m_net->Kick(m_a);
    RunFor();
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::LOC_PROT_ERR);
    EXPECT_EQ(ro, std::vector<uint8_t>(4096, 0xEE));
}

TEST_P(ReadAtomicPair, CompareAndSwapAndFetchAndAdd)
{
    Setup(ACCESS_REMOTE_ATOMIC);
    SetRemoteWord(0, 100);
    SetRemoteWord(8, 7);
    // CAS that matches: stores 555, returns 100.
    ASSERT_EQ(Atomic(1, WrOpcode::ATOMIC_CMP_AND_SWP, 0, 100, 555, 0), PostStatus::OK);
    // CAS that does not match (the word is 555 by then, in Verbs order): stores nothing,
    // returns 555.
    ASSERT_EQ(Atomic(2, WrOpcode::ATOMIC_CMP_AND_SWP, 0, 100, 999, 1), PostStatus::OK);
    // FETCH_AND_ADD: returns 7, leaves 7 + 2^40 + 3; the add wraps modulo 2^64.
    ASSERT_EQ(Atomic(3, WrOpcode::ATOMIC_FETCH_AND_ADD, 8, (1ull << 40) + 3, 0, 2), PostStatus::OK);
    ASSERT_EQ(Atomic(4, WrOpcode::ATOMIC_FETCH_AND_ADD, 8, ~uint64_t(0), 0, 3), PostStatus::OK);
    RunFor();
    const auto& c = m_net->Completions(m_a);
    ASSERT_EQ(c.size(), 4u);
    for (const Completion& x : c)
    {
        EXPECT_EQ(x.status, WcStatus::SUCCESS);
        EXPECT_EQ(x.byteLen, 8u);
    }
    EXPECT_EQ(c[0].opcode, WcOpcode::COMP_SWAP);
    EXPECT_EQ(c[2].opcode, WcOpcode::FETCH_ADD);
    EXPECT_EQ(m_local[0], 100u);
    EXPECT_EQ(m_local[1], 555u);
    EXPECT_EQ(RemoteWord(0), 555u);
    EXPECT_EQ(m_local[2], 7u);
    EXPECT_EQ(m_local[3], 7u + (1ull << 40) + 3);
    EXPECT_EQ(RemoteWord(8), 7u + (1ull << 40) + 2) << "minus one, modulo 2^64";
    auto atomics = [this](uint32_t src, PacketKind kind) {
        return SentIf(src,
                      [kind](const OpcodeInfo& i, uint8_t) { return i.atomic && i.kind == kind; });
    };
    EXPECT_EQ(atomics(m_b, PacketKind::RESPONSE), 4u) << "one answer each, nothing lost";
    EXPECT_EQ(atomics(m_a, PacketKind::DATA), 4u);
    EXPECT_EQ(Sent(m_a, MetaRoce() ? uint8_t(MR_CMP_SWAP) : uint8_t(RC_CMP_SWAP)), 2u);
    EXPECT_EQ(Sent(m_a, MetaRoce() ? uint8_t(MR_FETCH_ADD) : uint8_t(RC_FETCH_ADD)), 2u);
}

TEST_P(ReadAtomicPair, AtomicsNeedRemoteAtomicAndAlignment)
{
    Setup(ACCESS_REMOTE_READ | ACCESS_REMOTE_WRITE);
    SetRemoteWord(0, 1);
    ASSERT_EQ(Atomic(1, WrOpcode::ATOMIC_FETCH_AND_ADD, 0, 1, 0), PostStatus::OK);
    RunFor();
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::REM_ACCESS_ERR);
    EXPECT_EQ(RemoteWord(0), 1u);
    EXPECT_EQ(m_local[0], 0u);

    Setup(ACCESS_REMOTE_ATOMIC);
    SetRemoteWord(0, 1);
    SetRemoteWord(8, 1);
    ASSERT_EQ(Atomic(2, WrOpcode::ATOMIC_FETCH_AND_ADD, 4, 1, 0), PostStatus::OK);
    RunFor();
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::REM_INV_REQ_ERR) << "misaligned";
    EXPECT_EQ(RemoteWord(0), 1u);
    EXPECT_EQ(RemoteWord(8), 1u);

    Setup(ACCESS_REMOTE_ATOMIC);
    EXPECT_EQ(Atomic(3, WrOpcode::ATOMIC_FETCH_AND_ADD, 0, 1, 0, 0, 4),
              PostStatus::INVALID_ARGUMENT)
        << "the local buffer holds one 64-bit word";
}

INSTANTIATE_TEST_SUITE_P(Transports,
                         ReadAtomicPair,
                         ::testing::Values("gbn", "irn", "metaroce"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

} // namespace
} // namespace test
} // namespace metaroce
