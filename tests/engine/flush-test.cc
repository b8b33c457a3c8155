/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Endpoint::FlushConnection (Verbs: ibv_modify_qp to ERR) on both engines: every outstanding
// send and receive completes with WR_FLUSH_ERR, in post order, and nothing is sent after it.

#include "pair-fixture.h"

#include <gtest/gtest.h>

namespace metaroce
{
namespace test
{
namespace
{

class FlushTest : public PairTest, public ::testing::WithParamInterface<const char*>
{
};

TEST_P(FlushTest, OutstandingWorkCompletesWithFlushErrorInOrder)
{
    ConnectionConfig cfg = std::string(GetParam()) == "rocev2" ? RoceConfig() : ConnectionConfig();
    Build(cfg);
    // Nothing reaches B: every WRITE stays outstanding at A.
    m_net->Link(m_a, m_b).blackHole = true;
    for (uint64_t i = 0; i < 4; ++i)
    {
        ASSERT_EQ(Write(i, 4096 * i, 3000), PostStatus::OK);
    }
    for (uint64_t i = 0; i < 3; ++i)
    {
        RecvWr r;
        r.wrId = 100 + i;
        r.sge = {m_dstMr.addr, 4096, m_dstMr.lkey};
        ASSERT_EQ(B().PostRecv(m_net->Now(), m_qb, r), PostStatus::OK);
    }
    m_net->RunUntil(m_net->Now() + MicroSeconds(50));
    ASSERT_TRUE(m_net->Completions(m_a).empty());

    ASSERT_TRUE(A().FlushConnection(m_net->Now(), m_qa));
    ASSERT_TRUE(B().FlushConnection(m_net->Now(), m_qb));
    EXPECT_FALSE(A().FlushConnection(m_net->Now(), 999999)) << "an unknown QPN";
    m_net->Kick(m_a);
    m_net->Kick(m_b);
    m_net->RunUntil(m_net->Now() + MilliSeconds(5));
    const auto& ca = m_net->Completions(m_a);
    ASSERT_EQ(ca.size(), 4u);
    for (uint64_t i = 0; i < 4; ++i)
    {
        EXPECT_EQ(ca[i].wrId, i);
        EXPECT_EQ(ca[i].status, WcStatus::WR_FLUSH_ERR);
    }
    const auto& cb = m_net->Completions(m_b);
    ASSERT_EQ(cb.size(), 3u);
    for (uint64_t i = 0; i < 3; ++i)
    {
        EXPECT_EQ(cb[i].wrId, 100 + i);
        EXPECT_EQ(cb[i].status, WcStatus::WR_FLUSH_ERR);
    }
    EXPECT_TRUE(A().GetConnection(m_qa)->InError());
    EXPECT_EQ(Write(9, 0, 10), PostStatus::CONNECTION_ERROR);
    // Flushing twice changes nothing.
    ASSERT_TRUE(A().FlushConnection(m_net->Now(), m_qa));
    m_net->RunUntil(m_net->Now() + MilliSeconds(1));
    EXPECT_EQ(m_net->Completions(m_a).size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Transports,
                         FlushTest,
                         ::testing::Values("metaroce", "rocev2"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

} // namespace
} // namespace test
} // namespace metaroce
