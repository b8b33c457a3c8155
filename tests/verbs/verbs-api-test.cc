/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The drop-in libibverbs through its Verbs API, in one process: two RC QPs of metaroce0 on the
// loopback interface, connected to each other (no root needed). The test links our
// libibverbs.so.1, not rdma-core's.

#include "metaroce-verbs-ext.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <string>
#include <vector>

namespace
{

/// A device context with a PD, a CQ on a completion channel, and helpers to make QPs.
class VerbsTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        setenv("METAROCE_VERBS_IFACE", "lo", 1);
        setenv("METAROCE_VERBS_LOG", "error", 1);
        setenv("METAROCE_VERBS_UDP_PORT", "47917", 1);
        int n = 0;
        m_list = ibv_get_device_list(&n);
        ASSERT_NE(m_list, nullptr);
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(ibv_get_device_name(m_list[0]), "metaroce0");
        m_ctx = ibv_open_device(m_list[0]);
        ASSERT_NE(m_ctx, nullptr);
        m_pd = ibv_alloc_pd(m_ctx);
        ASSERT_NE(m_pd, nullptr);
        m_channel = ibv_create_comp_channel(m_ctx);
        ASSERT_NE(m_channel, nullptr);
        m_cq = ibv_create_cq(m_ctx, 64, this, m_channel, 0);
        ASSERT_NE(m_cq, nullptr);
        m_buf.assign(1 << 16, 0);
        m_mr = ibv_reg_mr(m_pd,
                          m_buf.data(),
                          m_buf.size(),
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
        ASSERT_NE(m_mr, nullptr);
    }

    void TearDown() override
    {
        for (ibv_qp* qp : m_qps)
        {
            EXPECT_EQ(ibv_destroy_qp(qp), 0);
        }
        if (m_mr)
        {
            EXPECT_EQ(ibv_dereg_mr(m_mr), 0);
        }
        if (m_cq)
        {
            EXPECT_EQ(ibv_destroy_cq(m_cq), 0);
        }
        if (m_channel)
        {
            EXPECT_EQ(ibv_destroy_comp_channel(m_channel), 0);
        }
        if (m_pd)
        {
            EXPECT_EQ(ibv_dealloc_pd(m_pd), 0);
        }
        if (m_ctx)
        {
            EXPECT_EQ(ibv_close_device(m_ctx), 0);
        }
        if (m_list)
        {
            ibv_free_device_list(m_list);
        }
    }

    /// Create an RC QP (with \p ext if given) and move it to INIT.
    ibv_qp* MakeQp(const metaroce_verbs_qp_attr* ext = nullptr)
    {
        ibv_qp_init_attr init{};
        init.send_cq = m_cq;
        init.recv_cq = m_cq;
        init.qp_type = IBV_QPT_RC;
        init.cap.max_send_wr = 16;
        init.cap.max_recv_wr = 16;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        init.cap.max_inline_data = 64;
        ibv_qp* qp = ext ? metaroce_verbs_create_qp(m_pd, &init, ext) : ibv_create_qp(m_pd, &init);
        if (qp == nullptr)
        {
            return nullptr;
        }
        m_qps.push_back(qp);
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        a.qp_access_flags =
            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        EXPECT_EQ(
            ibv_modify_qp(qp,
                          &a,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
            0);
        return qp;
    }

    /// Move \p qp to RTR toward \p peer (over our own GID), then to RTS. \return errno
    int Connect(ibv_qp* qp, ibv_qp* peer)
    {
        ibv_gid gid;
        EXPECT_EQ(ibv_query_gid(m_ctx, 1, 0, &gid), 0);
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = peer->qp_num;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = gid;
        a.ah_attr.port_num = 1;
        int err =
            ibv_modify_qp(qp,
                          &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
        if (err != 0)
        {
            return err;
        }
        a.qp_state = IBV_QPS_RTS;
        return ibv_modify_qp(qp,
                             &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    }

    /// Poll until \p n completions arrived (at most 5 s).
    std::vector<ibv_wc> PollN(int n)
    {
        std::vector<ibv_wc> out;
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (int(out.size()) < n && std::chrono::steady_clock::now() < end)
        {
            ibv_wc wc[8];
            int got = ibv_poll_cq(m_cq, 8, wc);
            EXPECT_GE(got, 0);
            out.insert(out.end(), wc, wc + got);
        }
        return out;
    }

    /// Post a one-SGE send work request. \return errno
    int Post(ibv_qp* qp,
             ibv_wr_opcode op,
             uint64_t local,
             uint32_t len,
             uint64_t remote,
             unsigned flags = IBV_SEND_SIGNALED)
    {
        ibv_sge sge{local, len, m_mr->lkey};
        ibv_send_wr wr{};
        wr.wr_id = 7;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = op;
        wr.send_flags = flags;
        wr.wr.rdma.remote_addr = remote;
        wr.wr.rdma.rkey = m_mr->rkey;
        ibv_send_wr* bad = nullptr;
        return ibv_post_send(qp, &wr, &bad);
    }

    uint64_t Addr(size_t offset) const
    {
        return uint64_t(uintptr_t(m_buf.data() + offset));
    }

    ibv_device** m_list{nullptr};
    ibv_context* m_ctx{nullptr};
    ibv_pd* m_pd{nullptr};
    ibv_comp_channel* m_channel{nullptr};
    ibv_cq* m_cq{nullptr};
    ibv_mr* m_mr{nullptr};
    std::vector<uint8_t> m_buf;
    std::vector<ibv_qp*> m_qps;
};

TEST_F(VerbsTest, PortAndGidAreThoseOfARoceNic)
{
    ibv_port_attr port;
    ASSERT_EQ(ibv_query_port(m_ctx, 1, &port), 0);
    EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
    EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(port.gid_tbl_len, 1);
    EXPECT_NE(ibv_query_port(m_ctx, 2, &port), 0);
    ibv_gid_entry entry;
    ASSERT_EQ(ibv_query_gid_ex(m_ctx, 1, 0, &entry, 0), 0);
    EXPECT_EQ(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
    const uint8_t loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    EXPECT_EQ(std::memcmp(entry.gid.raw, loopback, 16), 0);
    EXPECT_EQ(ibv_query_gid_ex(m_ctx, 1, 1, &entry, 0), ENODATA);
    ibv_device_attr_ex dev;
    ASSERT_EQ(ibv_query_device_ex(m_ctx, nullptr, &dev), 0);
    EXPECT_EQ(dev.orig_attr.phys_port_cnt, 1);
    EXPECT_EQ(dev.orig_attr.atomic_cap, IBV_ATOMIC_HCA); // MetaRoCE (the default) has atomics
}

TEST_F(VerbsTest, SendRecvAndWriteWithImmCompleteAndTheChannelFdBecomesReadable)
{
    ibv_qp* a = MakeQp();
    ibv_qp* b = MakeQp();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    // A receive posted in INIT is kept until RTR.
    ibv_sge sge{Addr(4096), 4096, m_mr->lkey};
    ibv_recv_wr rwr{};
    rwr.wr_id = 99;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    ibv_recv_wr* badRecv = nullptr;
    ASSERT_EQ(ibv_post_recv(b, &rwr, &badRecv), 0);
    ASSERT_EQ(Connect(a, b), 0);
    ASSERT_EQ(Connect(b, a), 0);
    ASSERT_EQ(ibv_req_notify_cq(m_cq, 0), 0);
    std::memcpy(m_buf.data(), "hello metaroce", 15);
    ASSERT_EQ(Post(a, IBV_WR_SEND, Addr(0), 15, 0), 0);
    pollfd pfd{m_channel->fd, POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 5000), 1) << "the channel fd never became readable";
    ibv_cq* evCq = nullptr;
    void* evCtx = nullptr;
    ASSERT_EQ(ibv_get_cq_event(m_channel, &evCq, &evCtx), 0);
    EXPECT_EQ(evCq, m_cq);
    EXPECT_EQ(evCtx, this);
    ibv_ack_cq_events(m_cq, 1);
    std::vector<ibv_wc> wcs = PollN(2);
    ASSERT_EQ(wcs.size(), 2u);
    bool sawRecv = false;
    for (const ibv_wc& wc : wcs)
    {
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
        if (wc.opcode == IBV_WC_RECV)
        {
            sawRecv = true;
            EXPECT_EQ(wc.wr_id, 99u);
            EXPECT_EQ(wc.byte_len, 15u);
            EXPECT_EQ(wc.qp_num, b->qp_num);
        }
    }
    EXPECT_TRUE(sawRecv);
    EXPECT_STREQ(reinterpret_cast<const char*>(m_buf.data() + 4096), "hello metaroce");
    // An inline RDMA WRITE: the source may change right after the post.
    std::memcpy(m_buf.data() + 100, "inline!", 8);
    ASSERT_EQ(
        Post(a, IBV_WR_RDMA_WRITE, Addr(100), 8, Addr(8192), IBV_SEND_INLINE | IBV_SEND_SIGNALED),
        0);
    std::memcpy(m_buf.data() + 100, "changed", 8);
    wcs = PollN(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_WRITE);
    EXPECT_STREQ(reinterpret_cast<const char*>(m_buf.data() + 8192), "inline!");
}

TEST_F(VerbsTest, ReadWorksOnBothTransports)
{
    ibv_qp* a = MakeQp();
    ibv_qp* b = MakeQp();
    ASSERT_EQ(Connect(a, b), 0);
    ASSERT_EQ(Connect(b, a), 0);
    metaroce_verbs_path_info paths[16];
    EXPECT_EQ(metaroce_verbs_query_paths(a, paths, 16), 8); // METAROCE_VERBS_PATHS default
    std::memcpy(m_buf.data() + 2048, "read me", 8);
    ASSERT_EQ(Post(a, IBV_WR_RDMA_READ, Addr(3000), 8, Addr(2048)), 0);
    std::vector<ibv_wc> wcs = PollN(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_READ);
    EXPECT_STREQ(reinterpret_cast<const char*>(m_buf.data() + 3000), "read me");

    metaroce_verbs_qp_attr ext{};
    ext.comp_mask = METAROCE_VERBS_QP_ATTR_TRANSPORT;
    ext.transport = METAROCE_VERBS_TRANSPORT_ROCEV2;
    ibv_qp* c = MakeQp(&ext);
    ibv_qp* d = MakeQp(&ext);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(Connect(c, d), 0);
    ASSERT_EQ(Connect(d, c), 0);
    std::memcpy(m_buf.data() + 2048, "read us", 8);
    ASSERT_EQ(Post(c, IBV_WR_RDMA_READ, Addr(3000), 8, Addr(2048)), 0);
    wcs = PollN(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_READ);
    EXPECT_STREQ(reinterpret_cast<const char*>(m_buf.data() + 3000), "read us");
    metaroce_verbs_qp_counters counters;
    ASSERT_EQ(metaroce_verbs_query_counters(c, &counters), 0);
    EXPECT_GE(counters.data_packets_sent + counters.data_packets_received, 1u);
}

TEST_F(VerbsTest, PerQpOverridesGoThroughTheTransportMapping)
{
    // Out of range or unknown: refused with EINVAL, as the METAROCE_VERBS_* variables are.
    for (uint32_t paths : {0u, 129u})
    {
        metaroce_verbs_qp_attr ext{};
        ext.comp_mask = METAROCE_VERBS_QP_ATTR_NUM_PATHS;
        ext.num_paths = paths;
        errno = 0;
        EXPECT_EQ(MakeQp(&ext), nullptr) << paths << " paths";
        EXPECT_EQ(errno, EINVAL) << paths << " paths";
    }
    metaroce_verbs_qp_attr bad{};
    bad.comp_mask = METAROCE_VERBS_QP_ATTR_TRANSPORT;
    bad.transport = 7;
    errno = 0;
    EXPECT_EQ(MakeQp(&bad), nullptr);
    EXPECT_EQ(errno, EINVAL);
    // In range: the QP has the paths it asked for, not the device's default.
    metaroce_verbs_qp_attr ext{};
    ext.comp_mask = METAROCE_VERBS_QP_ATTR_NUM_PATHS;
    ext.num_paths = 3;
    ibv_qp* a = MakeQp(&ext);
    ASSERT_NE(a, nullptr);
    metaroce_verbs_path_info paths[8];
    EXPECT_EQ(metaroce_verbs_query_paths(a, paths, 8), 3);
    // The bitmask names what is set: a num_paths without its bit is not read.
    metaroce_verbs_qp_attr unset{};
    unset.num_paths = 0;
    ibv_qp* b = MakeQp(&unset);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(metaroce_verbs_query_paths(b, paths, 8), 8);
}

TEST_F(VerbsTest, ModifyToErrFlushesOutstandingWorkInOrder)
{
    auto postRecv = [&](ibv_qp* qp, uint64_t id) {
        ibv_sge sge{Addr(8192), 64, m_mr->lkey};
        ibv_recv_wr wr{};
        wr.wr_id = id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        return ibv_post_recv(qp, &wr, &bad);
    };
    auto toErr = [](ibv_qp* qp) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        return ibv_modify_qp(qp, &a, IBV_QP_STATE);
    };
    // Connected: two receives wait for SENDs that never come.
    ibv_qp* a = MakeQp();
    ibv_qp* b = MakeQp();
    ASSERT_EQ(Connect(a, b), 0);
    ASSERT_EQ(Connect(b, a), 0);
    ASSERT_EQ(postRecv(b, 11), 0);
    ASSERT_EQ(postRecv(b, 12), 0);
    // In INIT: a receive held for RTR.
    ibv_qp* c = MakeQp();
    ASSERT_EQ(postRecv(c, 21), 0);
    ASSERT_EQ(toErr(b), 0);
    ASSERT_EQ(toErr(c), 0);
    std::vector<ibv_wc> wcs = PollN(3);
    ASSERT_EQ(wcs.size(), 3u);
    std::vector<uint64_t> ids;
    for (const ibv_wc& wc : wcs)
    {
        EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR) << wc.wr_id;
        ids.push_back(wc.wr_id);
    }
    EXPECT_EQ(ids, (std::vector<uint64_t>{11, 12, 21}));
    EXPECT_EQ(postRecv(b, 13), EINVAL) << "no posts in ERR";
    EXPECT_EQ(Post(b, IBV_WR_SEND, Addr(0), 8, 0), EINVAL);
    EXPECT_EQ(toErr(b), 0) << "ERR to ERR is allowed and flushes nothing more";
    ibv_wc extra;
    EXPECT_EQ(ibv_poll_cq(m_cq, 1, &extra), 0);
}

TEST_F(VerbsTest, UnsupportedCallsReturnTheDocumentedErrors)
{
    ibv_srq_init_attr srqAttr{};
    errno = 0;
    EXPECT_EQ(ibv_create_srq(m_pd, &srqAttr), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    ibv_ah_attr ah{};
    errno = 0;
    EXPECT_EQ(ibv_create_ah(m_pd, &ah), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    ibv_qp_init_attr ud{};
    ud.send_cq = m_cq;
    ud.recv_cq = m_cq;
    ud.qp_type = IBV_QPT_UD;
    errno = 0;
    EXPECT_EQ(ibv_create_qp(m_pd, &ud), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    ud.qp_type = IBV_QPT_RC;
    ud.cap.max_send_sge = 4; // beyond max_sge
    errno = 0;
    EXPECT_EQ(ibv_create_qp(m_pd, &ud), nullptr);
    EXPECT_EQ(errno, EINVAL);
    // A RoCE QP needs a GRH at RTR.
    ibv_qp* a = MakeQp();
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.dest_qp_num = a->qp_num;
    EXPECT_EQ(ibv_modify_qp(a, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN), EINVAL);
    // Posting a send before RTS fails.
    EXPECT_EQ(Post(a, IBV_WR_SEND, Addr(0), 1, 0), EINVAL);
    ibv_cq_init_attr_ex cqx{};
    cqx.cqe = 4;
    errno = 0;
    EXPECT_EQ(ibv_create_cq_ex(m_ctx, &cqx), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(VerbsTest, ResourcesInUseCannotBeDestroyed)
{
    ibv_qp* a = MakeQp();
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(ibv_destroy_cq(m_cq), EBUSY);                // the QP completes on it
    EXPECT_EQ(ibv_dealloc_pd(m_pd), EBUSY);                // the MR and the QP
    EXPECT_EQ(ibv_destroy_comp_channel(m_channel), EBUSY); // the CQ
    ASSERT_EQ(ibv_destroy_qp(a), 0);
    m_qps.clear();
    EXPECT_EQ(ibv_dealloc_pd(m_pd), EBUSY); // the MR
}

TEST(VerbsConfigTest, BadEnvironmentIsAClearError)
{
    setenv("METAROCE_VERBS_IFACE", "lo", 1);
    setenv("METAROCE_VERBS_LOG", "off", 1);
    setenv("METAROCE_VERBS_TRANSPORT", "tcp", 1);
    errno = 0;
    EXPECT_EQ(ibv_get_device_list(nullptr), nullptr);
    EXPECT_EQ(errno, EINVAL);
    unsetenv("METAROCE_VERBS_TRANSPORT");
    setenv("METAROCE_VERBS_PORT", "tap", 1);
    errno = 0;
    EXPECT_EQ(ibv_get_device_list(nullptr), nullptr);
    EXPECT_EQ(errno, EINVAL);
    unsetenv("METAROCE_VERBS_PORT");
    setenv("METAROCE_VERBS_IFACE", "no-such-if0", 1);
    int n = -1;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    EXPECT_EQ(n, 0);
    EXPECT_EQ(list[0], nullptr);
    ibv_free_device_list(list);
    unsetenv("METAROCE_VERBS_IFACE");
}

/// \return the stderr line of ibv_get_device_list() refusing the environment (EINVAL), or "".
std::string
RefusalOf(const char* name, const char* value)
{
    setenv("METAROCE_VERBS_IFACE", "lo", 1);
    setenv("METAROCE_VERBS_LOG", "error", 1);
    setenv(name, value, 1);
    errno = 0;
    ::testing::internal::CaptureStderr();
    ibv_device** list = ibv_get_device_list(nullptr);
    std::string out = ::testing::internal::GetCapturedStderr();
    int err = errno;
    unsetenv(name);
    if (list != nullptr)
    {
        ibv_free_device_list(list);
        return "";
    }
    return err == EINVAL ? out : "";
}

TEST(VerbsConfigTest, BadTransportSettingsNameTheVariableAndGetTheMappingsMessage)
{
    EXPECT_NE(RefusalOf("METAROCE_VERBS_TRANSPORT", "tcp")
                  .find("METAROCE_VERBS_TRANSPORT=tcp: transport 'tcp': expected metaroce or "
                        "rocev2"),
              std::string::npos);
    EXPECT_NE(RefusalOf("METAROCE_VERBS_PATHS", "0")
                  .find("METAROCE_VERBS_PATHS=0: paths 0: must be in [1, 128]"),
              std::string::npos);
    EXPECT_NE(RefusalOf("METAROCE_VERBS_PATHS", "many")
                  .find("METAROCE_VERBS_PATHS=many: not a whole number"),
              std::string::npos);
    EXPECT_NE(RefusalOf("METAROCE_VERBS_MTU", "1022")
                  .find("METAROCE_VERBS_MTU=1022: mtu 1022: must be a multiple of 4"),
              std::string::npos);
    EXPECT_NE(
        RefusalOf("METAROCE_VERBS_MTU", "1000").find("METAROCE_VERBS_MTU=1000: not an IB MTU"),
        std::string::npos);
    EXPECT_NE(RefusalOf("METAROCE_VERBS_MTU", "8192").find("METAROCE_VERBS_MTU=8192"),
              std::string::npos);
    EXPECT_NE(RefusalOf("METAROCE_VERBS_HOST_DELAY", "yes")
                  .find("METAROCE_VERBS_HOST_DELAY=yes: use on or off"),
              std::string::npos);
    EXPECT_EQ(RefusalOf("METAROCE_VERBS_HOST_DELAY", "off"), "") << "a valid value is taken";
    EXPECT_NE(RefusalOf("METAROCE_VERBS_PACING_SLACK_US", "10001")
                  .find("METAROCE_VERBS_PACING_SLACK_US=10001"),
              std::string::npos);
    EXPECT_EQ(RefusalOf("METAROCE_VERBS_PACING_SLACK_US", "0"), "") << "a valid value is taken";
    unsetenv("METAROCE_VERBS_IFACE");
}

TEST(VerbsConfigTest, ValidTransportSettingsMapAsBefore)
{
    setenv("METAROCE_VERBS_IFACE", "lo", 1);
    setenv("METAROCE_VERBS_LOG", "error", 1);
    setenv("METAROCE_VERBS_TRANSPORT", "rocev2", 1);
    setenv("METAROCE_VERBS_PATHS", "4", 1);
    setenv("METAROCE_VERBS_MTU", "512", 1);
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(n, 1);
    ibv_context* ctx = ibv_open_device(list[0]);
    ASSERT_NE(ctx, nullptr);
    metaroce_verbs_device_info info{};
    ASSERT_EQ(metaroce_verbs_query_device(ctx, &info), 0);
    EXPECT_EQ(info.transport, uint32_t(METAROCE_VERBS_TRANSPORT_ROCEV2));
    EXPECT_EQ(info.num_paths, 4u); // the device default, kept for MetaRoCE QPs
    EXPECT_EQ(info.active_mtu, 512u);
    EXPECT_EQ(ibv_close_device(ctx), 0);
    ibv_free_device_list(list);
    unsetenv("METAROCE_VERBS_TRANSPORT");
    unsetenv("METAROCE_VERBS_PATHS");
    unsetenv("METAROCE_VERBS_MTU");
    unsetenv("METAROCE_VERBS_IFACE");
}

} // namespace
