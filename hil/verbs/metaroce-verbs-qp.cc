/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Reliable-connected QPs of the drop-in libibverbs: one engine connection each. The QP number
// is the engine's; the destination GID (IPv4-mapped) and QP number given at RTR become the
// engine's Connect().

#include "metaroce-hil-log.h"
#include "metaroce-hil-timers.h"
#include "metaroce-rocev2-role.h"
#include "metaroce-transport-settings.h"
#include "metaroce-verbs-ext.h"
#include "metaroce-verbs-objects.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <optional>
#include <spdlog/spdlog.h>

using namespace metaroce;
using namespace metaroce::verbs;

namespace
{

constexpr uint32_t MAX_WR = 1024;    //!< the engine's maxOutstandingWrs / maxPostedRecvs
constexpr uint32_t MAX_INLINE = 256; //!< bytes copied at post by IBV_SEND_INLINE

/// \return the engine opcode of \p op, false if the engine has none.
bool
ToEngine(ibv_wr_opcode op, WrOpcode& out)
{
    switch (op)
    {
    case IBV_WR_RDMA_WRITE:
        out = WrOpcode::RDMA_WRITE;
        return true;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        out = WrOpcode::RDMA_WRITE_WITH_IMM;
        return true;
    case IBV_WR_SEND:
        out = WrOpcode::SEND;
        return true;
    case IBV_WR_SEND_WITH_IMM:
        out = WrOpcode::SEND_WITH_IMM;
        return true;
    case IBV_WR_RDMA_READ:
        out = WrOpcode::RDMA_READ;
        return true;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        out = WrOpcode::ATOMIC_CMP_AND_SWP;
        return true;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        out = WrOpcode::ATOMIC_FETCH_AND_ADD;
        return true;
    default:
        return false;
    }
}

/// \return the IPv4 address of an IPv4-mapped GID, false for any other GID.
bool
GidToIpv4(const ibv_gid& gid, uint32_t& ip)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(gid.raw, prefix, sizeof(prefix)) != 0)
    {
        return false;
    }
    uint32_t be;
    std::memcpy(&be, &gid.raw[12], 4);
    ip = ntohl(be);
    return ip != 0;
}

/// \return bytes of \p mtu.
uint32_t
MtuBytes(ibv_mtu mtu)
{
    return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 0;
}

/// Post one send work request (runtime mutex held). \return errno
int
PostOneSend(Qp& q, const ibv_send_wr& wr)
{
    if (q.qp.state != IBV_QPS_RTS)
    {
        return EINVAL;
    }
    SendWr s;
    if (!ToEngine(wr.opcode, s.opcode))
    {
        LogUnsupported("ibv_post_send opcode (LOCAL_INV, BIND_MW, SEND_WITH_INV, TSO)");
        return EOPNOTSUPP;
    }
    if (wr.num_sge < 0 || wr.num_sge > 1)
    {
        LogUnsupported("ibv_post_send with more than one SGE");
        return EINVAL;
    }
    s.wrId = wr.wr_id;
    s.signaled = q.sigAll || (wr.send_flags & IBV_SEND_SIGNALED);
    s.immData = wr.imm_data;
    if (wr.num_sge == 1)
    {
        s.sge.addr = wr.sg_list[0].addr;
        s.sge.length = wr.sg_list[0].length;
        s.sge.lkey = wr.sg_list[0].lkey;
    }
    if (IsAtomic(s.opcode))
    {
        s.remoteAddr = wr.wr.atomic.remote_addr;
        s.rkey = wr.wr.atomic.rkey;
        s.compareAdd = wr.wr.atomic.compare_add;
        s.swap = wr.wr.atomic.swap;
    }
    else
    {
        s.remoteAddr = wr.wr.rdma.remote_addr;
        s.rkey = wr.wr.rdma.rkey;
    }
    if ((wr.send_flags & IBV_SEND_INLINE) && wr.num_sge == 1 && !IsReadOrAtomic(s.opcode))
    {
        if (s.sge.length > q.cap.max_inline_data)
        {
            return EINVAL;
        }
        // The bytes are taken now; the engine reads them from the QP's own slot.
        uint64_t slot = q.inlineNext++ % std::max<uint32_t>(q.cap.max_send_wr, 1);
        uint8_t* dst = q.inlineBuf.data() + slot * q.cap.max_inline_data;
        std::memcpy(dst, reinterpret_cast<const void*>(uintptr_t(s.sge.addr)), s.sge.length);
        s.sge.addr = q.inlineMr.addr + slot * q.cap.max_inline_data;
        s.sge.lkey = q.inlineMr.lkey;
    }
    Runtime& rt = *q.runtime;
    PostStatus st = rt.Engine().PostSend(rt.Now(), q.qp.qp_num, s);
    if (st == PostStatus::NOT_SUPPORTED)
    {
        static bool logged = false;
        if (!logged)
        {
            logged = true;
            spdlog::warn("ibv_post_send: {} is not supported by the {} transport (EOPNOTSUPP)",
                         WrOpcodeName(s.opcode),
                         rt.Config().transport);
        }
    }
    else if (st != PostStatus::OK)
    {
        spdlog::debug("ibv_post_send on QP {}: {}", q.qp.qp_num, PostStatusName(st));
    }
    return PostStatusErrno(st);
}

int
PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** badWr)
{
    Qp& q = *ToQp(qp);
    std::lock_guard<std::mutex> lock(q.runtime->Mutex());
    int err = 0;
    for (; wr != nullptr; wr = wr->next)
    {
        err = PostOneSend(q, *wr);
        if (err != 0)
        {
            *badWr = wr;
            break;
        }
    }
    q.runtime->Kick();
    return err;
}

/// Post one receive (runtime mutex held). \return errno
int
PostOneRecv(Qp& q, const ibv_recv_wr& wr)
{
    if (q.qp.state == IBV_QPS_RESET || q.qp.state == IBV_QPS_ERR)
    {
        return EINVAL;
    }
    if (wr.num_sge < 0 || wr.num_sge > 1)
    {
        LogUnsupported("ibv_post_recv with more than one SGE");
        return EINVAL;
    }
    RecvWr r;
    r.wrId = wr.wr_id;
    if (wr.num_sge == 1)
    {
        r.sge.addr = wr.sg_list[0].addr;
        r.sge.length = wr.sg_list[0].length;
        r.sge.lkey = wr.sg_list[0].lkey;
    }
    if (!q.connected)
    {
        if (q.heldRecvs.size() >= q.cap.max_recv_wr)
        {
            return ENOMEM;
        }
        q.heldRecvs.push_back(r);
        return 0;
    }
    Runtime& rt = *q.runtime;
    return PostStatusErrno(rt.Engine().PostRecv(rt.Now(), q.qp.qp_num, r));
}

int
PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** badWr)
{
    Qp& q = *ToQp(qp);
    std::lock_guard<std::mutex> lock(q.runtime->Mutex());
    int err = 0;
    for (; wr != nullptr; wr = wr->next)
    {
        err = PostOneRecv(q, *wr);
        if (err != 0)
        {
            *badWr = wr;
            break;
        }
    }
    q.runtime->Kick();
    return err;
}

int
PostSrqRecv(ibv_srq* /*srq*/, ibv_recv_wr* wr, ibv_recv_wr** badWr)
{
    LogUnsupported("ibv_post_srq_recv");
    *badWr = wr;
    return EOPNOTSUPP;
}

/// Move \p q to RTR: connect the engine connection. \return errno
int
ToRtr(Qp& q, const ibv_qp_attr& attr, int mask)
{
    if (!(mask & IBV_QP_AV) || !(mask & IBV_QP_DEST_QPN))
    {
        return EINVAL;
    }
    if (!attr.ah_attr.is_global)
    {
        spdlog::error("ibv_modify_qp(RTR): metaroce0 is a RoCE device: the address vector needs "
                      "a GRH with the peer's GID (ibv_rc_pingpong: pass -g 0)");
        return EINVAL;
    }
    uint32_t ip = 0;
    if (!GidToIpv4(attr.ah_attr.grh.dgid, ip))
    {
        spdlog::error("ibv_modify_qp(RTR): the destination GID is not an IPv4-mapped RoCEv2 "
                      "GID (::ffff:a.b.c.d)");
        return EINVAL;
    }
    Runtime& rt = *q.runtime;
    if ((mask & IBV_QP_PATH_MTU) && MtuBytes(attr.path_mtu) > rt.Mtu())
    {
        spdlog::error("ibv_modify_qp(RTR): path MTU {} is above the port's active MTU {}",
                      MtuBytes(attr.path_mtu),
                      rt.Mtu());
        return EINVAL;
    }
    if ((mask & IBV_QP_PATH_MTU) && MtuBytes(attr.path_mtu) < rt.Mtu())
    {
        spdlog::info("QP {}: path MTU {} below the active MTU; the engine connection keeps {}",
                     q.qp.qp_num,
                     MtuBytes(attr.path_mtu),
                     rt.Mtu());
    }
    PostStatus st = rt.Engine().Connect(q.qp.qp_num, ip, attr.dest_qp_num);
    if (st != PostStatus::OK)
    {
        spdlog::error("ibv_modify_qp(RTR): Connect: {}", PostStatusName(st));
        return EINVAL;
    }
    rt.LearnPeer(ip);
    q.connected = true;
    spdlog::info("QP {} connected to QP {} at {}",
                 q.qp.qp_num,
                 attr.dest_qp_num,
                 hil::Ipv4ToString(ip));
    for (const RecvWr& r : q.heldRecvs)
    {
        PostStatus rs = rt.Engine().PostRecv(rt.Now(), q.qp.qp_num, r);
        if (rs != PostStatus::OK)
        {
            spdlog::error("QP {}: a receive posted in INIT failed at RTR: {}",
                          q.qp.qp_num,
                          PostStatusName(rs));
        }
    }
    q.heldRecvs.clear();
    rt.Kick();
    return 0;
}

int
ModifyQp(Qp& q, const ibv_qp_attr& attr, int mask)
{
    std::lock_guard<std::mutex> lock(q.runtime->Mutex());
    ibv_qp_state from = (mask & IBV_QP_CUR_STATE) ? attr.cur_qp_state : q.qp.state;
    ibv_qp_state to = (mask & IBV_QP_STATE) ? attr.qp_state : from;
    bool ok = to == from || to == IBV_QPS_ERR || to == IBV_QPS_RESET ||
              (from == IBV_QPS_RESET && to == IBV_QPS_INIT) ||
              (from == IBV_QPS_INIT && (to == IBV_QPS_INIT || to == IBV_QPS_RTR)) ||
              (from == IBV_QPS_RTR && to == IBV_QPS_RTS) ||
              (from == IBV_QPS_RTS && to == IBV_QPS_SQD) ||
              (from == IBV_QPS_SQD && to == IBV_QPS_RTS);
    if (!ok)
    {
        return EINVAL;
    }
    if (to == IBV_QPS_RTR && from == IBV_QPS_INIT)
    {
        if (int err = ToRtr(q, attr, mask))
        {
            return err;
        }
    }
    if (to == IBV_QPS_ERR && from != IBV_QPS_ERR)
    {
        // IB: every outstanding work request completes with IBV_WC_WR_FLUSH_ERR, in order.
        // Receives still held for RTR are flushed here; the engine flushes the rest.
        for (const RecvWr& r : q.heldRecvs)
        {
            Completion c;
            c.wrId = r.wrId;
            c.status = WcStatus::WR_FLUSH_ERR;
            c.opcode = WcOpcode::RECV;
            c.connectionId = q.qp.qp_num;
            q.OnCompletion(c);
        }
        q.heldRecvs.clear();
        if (q.connected)
        {
            Runtime& rt = *q.runtime;
            rt.Engine().FlushConnection(rt.Now(), q.qp.qp_num);
            rt.Kick(); // the pump delivers the flushed completions
        }
    }
    if (to == IBV_QPS_RESET && q.connected)
    {
        // The engine has no way back from a connected state for a connection.
        LogUnsupported("ibv_modify_qp to RESET after RTR (destroy the QP instead)");
        return EOPNOTSUPP;
    }
    if (mask & IBV_QP_ACCESS_FLAGS)
    {
        q.accessFlags = attr.qp_access_flags;
        q.attr.qp_access_flags = attr.qp_access_flags;
    }
    if (mask & IBV_QP_PORT)
    {
        if (attr.port_num != 1)
        {
            return EINVAL;
        }
        q.attr.port_num = attr.port_num;
    }
    if (mask & IBV_QP_AV)
    {
        q.attr.ah_attr = attr.ah_attr;
    }
    if (mask & IBV_QP_DEST_QPN)
    {
        q.attr.dest_qp_num = attr.dest_qp_num;
    }
    if (mask & IBV_QP_PATH_MTU)
    {
        q.attr.path_mtu = attr.path_mtu;
    }
    if (mask & IBV_QP_RQ_PSN)
    {
        q.attr.rq_psn = attr.rq_psn;
    }
    if (mask & IBV_QP_SQ_PSN)
    {
        q.attr.sq_psn = attr.sq_psn;
    }
    if (mask & IBV_QP_TIMEOUT)
    {
        q.attr.timeout = attr.timeout;
    }
    if (mask & IBV_QP_RETRY_CNT)
    {
        q.attr.retry_cnt = attr.retry_cnt;
    }
    if (mask & IBV_QP_RNR_RETRY)
    {
        q.attr.rnr_retry = attr.rnr_retry;
    }
    if (mask & IBV_QP_MIN_RNR_TIMER)
    {
        q.attr.min_rnr_timer = attr.min_rnr_timer;
    }
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
    {
        q.attr.max_rd_atomic = attr.max_rd_atomic;
    }
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
    {
        q.attr.max_dest_rd_atomic = attr.max_dest_rd_atomic;
    }
    if (mask & IBV_QP_PKEY_INDEX)
    {
        q.attr.pkey_index = attr.pkey_index;
    }
    q.qp.state = to;
    q.attr.qp_state = to;
    return 0;
}

/// \return the packets \p conn has received from its peer (data, duplicates, ACKs, NAKs,
/// probes): what changes while the peer is still talking to it.
uint64_t
ReceivedFromPeer(const TransportConnection& conn)
{
    const CounterSet& c = conn.Counters();
    return c.Get(Counter::RX_DATA) + c.Get(Counter::RX_DUPLICATE) + c.Get(Counter::RX_ACK) +
           c.Get(Counter::RX_NAK) + c.Get(Counter::RX_PROBE);
}

/**
 * How long a destroyed connection keeps answering after the last packet from its peer: four
 * times the RTO the peer may be waiting out before it resends (its resends and our answers
 * can be lost too: at 10 % loss a round trip fails one time in five), estimated from this side's
 * own settings and paths (the same links). MetaRoCE: the largest path RTO, at least the initial
 * RTO. RoCEv2: the local ACK timeout (go-back-N) or IRN's larger RTO.
 */
Time
QuietPeriod(const TransportConnection& conn)
{
    const ConnectionConfig& cfg = conn.Config();
    Time rto = cfg.rtoInitial;
    if (conn.Kind() == Transport::ROCEV2)
    {
        rto = cfg.rocev2.recovery == "irn" ? cfg.rocev2.irnRtoHigh
                                           : RoceLocalAckTimeout(cfg.rocev2.localAckTimeout);
    }
    for (size_t i = 0; i < conn.PathCount(); ++i)
    {
        const PathState* p = conn.Path(i);
        if (p != nullptr)
        {
            rto = std::max(rto, p->rtt.Rto());
        }
    }
    return 4 * rto;
}

/**
 * Before a connection is destroyed, keep it answering its peer for a while, as TCP's
 * TIME-WAIT does (docs/verbs.md, "Destroying a QP"):
 *  1. send what is due now or within an ACK delay (the acknowledgement of the last message
 *     received, which a NIC sends at once and the engine coalesces for up to ackDelay);
 *  2. if the peer sent data, wait until it has been silent for QuietPeriod(): when that last
 *     acknowledgement is lost, the peer resends after its RTO, and a connection that is gone
 *     by then would leave the peer's last send to end in a retry-exceeded error.
 * Waits at most LINGER_MAX.
 */
void
Linger(Qp& q)
{
    constexpr Time SOON = MicroSeconds(20);
    constexpr Time LINGER_MAX = MilliSeconds(1000);
    Runtime& rt = *q.runtime;
    const Time start = rt.Now();
    Time lastHeard = start;
    uint64_t heard = UINT64_MAX;
    while (rt.Now() - start < LINGER_MAX)
    {
        {
            std::lock_guard<std::mutex> lock(rt.Mutex());
            const TransportConnection* conn = rt.Engine().GetConnection(q.qp.qp_num);
            const Time now = rt.Now();
            if (conn == nullptr || !conn->Connected() || conn->InError())
            {
                return;
            }
            const uint64_t received = ReceivedFromPeer(*conn);
            if (received != heard)
            {
                heard = received;
                lastHeard = now;
            }
            const bool flushed = !conn->WantsToSend(now) && conn->NextDeadline() > now + SOON;
            const bool peerQuiet = conn->Counters().Get(Counter::RX_DATA) == 0 ||
                                   now - lastHeard >= QuietPeriod(*conn);
            if (flushed && peerQuiet)
            {
                return;
            }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

} // namespace

namespace metaroce
{
namespace verbs
{

void
InstallQpOps(Context& c)
{
    c.vctx.context.ops.post_send = PostSend;
    c.vctx.context.ops.post_recv = PostRecv;
    c.vctx.context.ops.post_srq_recv = PostSrqRecv;
}

/// Create a QP with \p ext settings (nullptr: from the environment).
ibv_qp*
CreateQp(ibv_pd* pd, ibv_qp_init_attr* init, const metaroce_verbs_qp_attr* ext)
{
    if (pd == nullptr || init == nullptr)
    {
        errno = EINVAL;
        return nullptr;
    }
    if (init->qp_type != IBV_QPT_RC)
    {
        LogUnsupported("ibv_create_qp of a type other than IBV_QPT_RC");
        errno = EOPNOTSUPP;
        return nullptr;
    }
    if (init->srq != nullptr)
    {
        LogUnsupported("ibv_create_qp with an SRQ");
        errno = EOPNOTSUPP;
        return nullptr;
    }
    const ibv_qp_cap& cap = init->cap;
    if (cap.max_send_wr > MAX_WR || cap.max_recv_wr > MAX_WR || cap.max_send_sge > 1 ||
        cap.max_recv_sge > 1 || cap.max_inline_data > MAX_INLINE || init->send_cq == nullptr ||
        init->recv_cq == nullptr)
    {
        spdlog::error("ibv_create_qp: capacities beyond the device's (at most {} work requests, "
                      "1 SGE, {} inline bytes) or no CQ",
                      MAX_WR,
                      MAX_INLINE);
        errno = EINVAL;
        return nullptr;
    }
    Context* c = ToContext(pd->context);
    Runtime& rt = *c->runtime;
    // The device's defaults, then the QP's overrides, through the engine's one transport
    // mapping (its limits and messages, as for the METAROCE_VERBS_* variables).
    TransportSettings settings;
    settings.transport = rt.Config().transport;
    settings.numPaths = rt.Config().numPaths;
    ConnectionConfig cc;
    if (ext != nullptr)
    {
        if (ext->comp_mask & METAROCE_VERBS_QP_ATTR_TRANSPORT)
        {
            if (ext->transport != METAROCE_VERBS_TRANSPORT_METAROCE &&
                ext->transport != METAROCE_VERBS_TRANSPORT_ROCEV2)
            {
                spdlog::error("metaroce_verbs_create_qp: transport {}: expected "
                              "METAROCE_VERBS_TRANSPORT_METAROCE or _ROCEV2",
                              ext->transport);
                errno = EINVAL;
                return nullptr;
            }
            settings.transport =
                ext->transport == METAROCE_VERBS_TRANSPORT_ROCEV2 ? "rocev2" : "metaroce";
        }
        if (ext->comp_mask & METAROCE_VERBS_QP_ATTR_NUM_PATHS)
        {
            settings.numPaths = ext->num_paths;
        }
        if (ext->comp_mask & METAROCE_VERBS_QP_ATTR_SOURCE_PORT_BASE)
        {
            cc.sourcePortBase = ext->source_port_base;
        }
    }
    if (const std::optional<TransportError> error = ApplyTransportSettings(settings, cc))
    {
        spdlog::error("metaroce_verbs_create_qp: {}", error->Message());
        errno = EINVAL;
        return nullptr;
    }
    cc.mtu = rt.Mtu();
    // Timers for a software endpoint on a real link, as metaroce-perf sets them.
    hil::LinkTimerInputs timers;
    timers.rtoFloor = MicroSeconds(rt.Config().rtoMinUs);
    timers.connectionTimeout = MilliSeconds(rt.Config().connTimeoutMs);
    hil::ApplyLinkTimers(cc, timers);
    auto q = std::make_unique<Qp>();
    q->runtime = &rt;
    q->cap = cap;
    q->cap.max_send_wr = std::max<uint32_t>(cap.max_send_wr, 1);
    q->cap.max_recv_wr = std::max<uint32_t>(cap.max_recv_wr, 1);
    q->sigAll = init->sq_sig_all != 0;
    uint32_t qpn = 0;
    std::string why;
    std::lock_guard<std::mutex> lock(rt.Mutex());
    PostStatus st = rt.Engine().CreateConnection(cc, qpn, &why);
    if (st != PostStatus::OK)
    {
        spdlog::error("ibv_create_qp: {} {}", PostStatusName(st), why);
        errno = EINVAL;
        return nullptr;
    }
    if (q->cap.max_inline_data > 0)
    {
        q->inlineBuf.assign(size_t(q->cap.max_send_wr) * q->cap.max_inline_data, 0);
        q->inlineMr = rt.Engine().RegisterMemory(q->inlineBuf.data(),
                                                 q->inlineBuf.size(),
                                                 ACCESS_LOCAL_WRITE);
    }
    ibv_qp& v = q->qp;
    v.context = pd->context;
    v.qp_context = init->qp_context;
    v.pd = pd;
    v.send_cq = init->send_cq;
    v.recv_cq = init->recv_cq;
    v.handle = qpn;
    v.qp_num = qpn;
    v.state = IBV_QPS_RESET;
    v.qp_type = IBV_QPT_RC;
    pthread_mutex_init(&v.mutex, nullptr);
    pthread_cond_init(&v.cond, nullptr);
    init->cap = q->cap;
    q->attr.qp_state = IBV_QPS_RESET;
    q->attr.cap = q->cap;
    q->attr.port_num = 1;
    reinterpret_cast<Pd*>(pd)->users++;
    reinterpret_cast<Cq*>(init->send_cq)->users++;
    reinterpret_cast<Cq*>(init->recv_cq)->users++;
    q->sink.owner = q.get();
    rt.SetSink(qpn, &q->sink);
    spdlog::debug("QP {} created ({} transport, {} paths)", qpn, cc.transport, cc.numPaths);
    return &q.release()->qp;
}

} // namespace verbs
} // namespace metaroce

extern "C"
{
    ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init)
    {
        return CreateQp(pd, init, nullptr);
    }

    ibv_qp* metaroce_verbs_create_qp(ibv_pd* pd,
                                     ibv_qp_init_attr* init,
                                     const metaroce_verbs_qp_attr* attr)
    {
        return CreateQp(pd, init, attr);
    }

    int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask)
    {
        if (qp == nullptr || attr == nullptr)
        {
            return EINVAL;
        }
        Qp& q = *ToQp(qp);
        return ModifyQp(q, *attr, mask);
    }

    int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int /*mask*/, ibv_qp_init_attr* init)
    {
        Qp& q = *ToQp(qp);
        std::lock_guard<std::mutex> lock(q.runtime->Mutex());
        *attr = q.attr;
        attr->qp_state = qp->state;
        attr->cur_qp_state = qp->state;
        attr->cap = q.cap;
        if (init != nullptr)
        {
            std::memset(init, 0, sizeof(*init));
            init->qp_context = qp->qp_context;
            init->send_cq = qp->send_cq;
            init->recv_cq = qp->recv_cq;
            init->cap = q.cap;
            init->qp_type = IBV_QPT_RC;
            init->sq_sig_all = q.sigAll;
        }
        return 0;
    }

    int ibv_destroy_qp(ibv_qp* qp)
    {
        Qp* q = ToQp(qp);
        Linger(*q);
        {
            std::lock_guard<std::mutex> lock(q->runtime->Mutex());
            q->runtime->SetSink(qp->qp_num, nullptr);
            q->runtime->Engine().DestroyConnection(qp->qp_num);
            if (q->inlineMr.lkey != 0)
            {
                q->runtime->Engine().DeregisterMemory(q->inlineMr.lkey);
            }
            q->runtime->Kick();
        }
        reinterpret_cast<Pd*>(qp->pd)->users--;
        reinterpret_cast<Cq*>(qp->send_cq)->users--;
        reinterpret_cast<Cq*>(qp->recv_cq)->users--;
        pthread_mutex_destroy(&qp->mutex);
        pthread_cond_destroy(&qp->cond);
        delete q;
        return 0;
    }

    ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* /*qp*/)
    {
        return nullptr; // QPs are not created with ibv_create_qp_ex (no ibv_wr_* API)
    }

} // extern "C"
