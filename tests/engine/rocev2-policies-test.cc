/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The RoCEv2 policy objects: every registered name builds, and each object keeps the
// behaviour the queue pair relies on.

#include "metaroce-policy-names.h"
#include "metaroce-rocev2-rate-control.h"
#include "metaroce-rocev2-recovery.h"

#include <gtest/gtest.h>

namespace metaroce
{
namespace test
{
namespace
{

TEST(RocePoliciesTest, EveryRateControlNameBuildsAndNoOtherDoes)
{
    ConnectionConfig cfg;
    for (const std::string& name : PolicyNames(PolicyKind::ROCE_RATE_CONTROL))
    {
        std::unique_ptr<RoceRateControl> rc = CreateRoceRateControl(name, cfg.rocev2, 100e9);
        ASSERT_NE(rc, nullptr) << name;
        EXPECT_EQ(rc->Name(), name);
    }
    EXPECT_EQ(CreateRoceRateControl("timely", cfg.rocev2, 100e9), nullptr);
    cfg.rocev2.dcqcn = true;
    EXPECT_STREQ(RoceRateControlName(cfg.rocev2), "dcqcn");
    cfg.rocev2.dcqcn = false;
    EXPECT_STREQ(RoceRateControlName(cfg.rocev2), "none");
    EXPECT_EQ(PolicyChoices(PolicyKind::ROCE_RATE_CONTROL), "dcqcn or none");
}

TEST(RocePoliciesTest, NoRateControlSendsAtTheCeilingAndNeverReports)
{
    ConnectionConfig cfg;
    std::unique_ptr<RoceRateControl> rc = CreateRoceRateControl("none", cfg.rocev2, 40e9);
    EXPECT_FALSE(rc->Advance(0).changed);
    rc->OnCnp(MicroSeconds(1));
    rc->OnBytesSent(MicroSeconds(2), 1 << 20);
    EXPECT_FALSE(rc->OnCeMarked(MicroSeconds(3)));
    EXPECT_FALSE(rc->Advance(MicroSeconds(4)).changed);
    EXPECT_EQ(rc->Rate(), 40e9);
    EXPECT_EQ(rc->ReactionPoint().Rate(), 40e9);
}

TEST(RocePoliciesTest, DcqcnReportsEachNewRateOnce)
{
    ConnectionConfig cfg;
    std::unique_ptr<RoceRateControl> rc = CreateRoceRateControl("dcqcn", cfg.rocev2, 100e9);
    RoceRateChange first = rc->Advance(0);
    EXPECT_TRUE(first.changed);
    EXPECT_FALSE(first.decreased); // the first report is no decrease
    EXPECT_EQ(first.rate, 100e9);
    EXPECT_FALSE(rc->Advance(MicroSeconds(1)).changed);
    rc->OnCnp(MicroSeconds(2));
    RoceRateChange cut = rc->Advance(MicroSeconds(2));
    EXPECT_TRUE(cut.changed);
    EXPECT_TRUE(cut.decreased);
    EXPECT_LT(cut.rate, 100e9);
    EXPECT_EQ(rc->Rate(), rc->ReactionPoint().Rate());
    // The notification point: one CNP per cnpInterval.
    EXPECT_TRUE(rc->OnCeMarked(MicroSeconds(10)));
    EXPECT_FALSE(rc->OnCeMarked(MicroSeconds(11)));
    EXPECT_TRUE(rc->OnCeMarked(MicroSeconds(10) + cfg.rocev2.cnpInterval));
}

TEST(RocePoliciesTest, EveryRecoveryNameBuildsBothHalvesAndNoOtherDoes)
{
    ConnectionConfig cfg;
    for (const std::string& name : PolicyNames(PolicyKind::ROCE_RECOVERY))
    {
        std::unique_ptr<RoceRecovery> requester = CreateRoceRecovery(name, cfg);
        ASSERT_NE(requester, nullptr) << name;
        EXPECT_EQ(requester->Name(), name);
        std::unique_ptr<RoceRecoveryReceiver> receiver = CreateRoceRecoveryReceiver(name, cfg);
        ASSERT_NE(receiver, nullptr) << name;
        EXPECT_EQ(receiver->Name(), name);
        EXPECT_FALSE(receiver->NackPending());
    }
    EXPECT_EQ(CreateRoceRecovery("rack", cfg), nullptr);
    EXPECT_EQ(CreateRoceRecoveryReceiver("rack", cfg), nullptr);
}

TEST(RocePoliciesTest, OnlyIrnPacketsDescribeTheirPlace)
{
    ConnectionConfig cfg;
    ParsedPacket pkt;
    pkt.bth.opcode = RC_WRITE_MIDDLE;
    CreateRoceRecovery("gbn", cfg)->Describe(pkt, 4096, 7);
    EXPECT_EQ(pkt.bth.opcode, RC_WRITE_MIDDLE);
    CreateRoceRecovery("irn", cfg)->Describe(pkt, 4096, 7);
    EXPECT_EQ(pkt.bth.opcode, RC_WRITE_MIDDLE | IRN_OPCODE_BASE);
    EXPECT_EQ(pkt.irh.offset, 4096u);
    EXPECT_EQ(pkt.irh.recvWqeSn, 7u);
    EXPECT_TRUE(LookupOpcode(pkt.bth.opcode).headers & HDR_IRH);
}

} // namespace
} // namespace test
} // namespace metaroce
