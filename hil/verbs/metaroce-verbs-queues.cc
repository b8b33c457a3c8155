/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Protection domains, memory regions, completion queues and channels of the drop-in
// libibverbs; the completion path from the engine to the application.

#include "metaroce-verbs-objects.h"

#include <cerrno>
#include <cstring>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

using namespace metaroce;
using namespace metaroce::verbs;

namespace metaroce
{
namespace verbs
{

namespace
{

ibv_wc_status
ToIbv(WcStatus s)
{
    switch (s)
    {
    case WcStatus::SUCCESS:
        return IBV_WC_SUCCESS;
    case WcStatus::LOC_LEN_ERR:
        return IBV_WC_LOC_LEN_ERR;
    case WcStatus::LOC_PROT_ERR:
        return IBV_WC_LOC_PROT_ERR;
    case WcStatus::WR_FLUSH_ERR:
        return IBV_WC_WR_FLUSH_ERR;
    case WcStatus::REM_INV_REQ_ERR:
        return IBV_WC_REM_INV_REQ_ERR;
    case WcStatus::REM_ACCESS_ERR:
        return IBV_WC_REM_ACCESS_ERR;
    case WcStatus::REM_OP_ERR:
        return IBV_WC_REM_OP_ERR;
    case WcStatus::RETRY_EXC_ERR:
        return IBV_WC_RETRY_EXC_ERR;
    case WcStatus::RNR_RETRY_EXC_ERR:
        return IBV_WC_RNR_RETRY_EXC_ERR;
    case WcStatus::GENERAL_ERR:
        break;
    }
    return IBV_WC_GENERAL_ERR;
}

ibv_wc_opcode
ToIbv(WcOpcode op)
{
    switch (op)
    {
    case WcOpcode::SEND:
        return IBV_WC_SEND;
    case WcOpcode::RDMA_WRITE:
        return IBV_WC_RDMA_WRITE;
    case WcOpcode::RECV:
        return IBV_WC_RECV;
    case WcOpcode::RECV_RDMA_WITH_IMM:
        return IBV_WC_RECV_RDMA_WITH_IMM;
    case WcOpcode::RDMA_READ:
        return IBV_WC_RDMA_READ;
    case WcOpcode::COMP_SWAP:
        return IBV_WC_COMP_SWAP;
    case WcOpcode::FETCH_ADD:
        return IBV_WC_FETCH_ADD;
    }
    return IBV_WC_SEND;
}

bool
IsReceive(WcOpcode op)
{
    return op == WcOpcode::RECV || op == WcOpcode::RECV_RDMA_WITH_IMM;
}

int
PollCq(ibv_cq* cq, int numEntries, ibv_wc* wc)
{
    Cq* q = reinterpret_cast<Cq*>(cq);
    int n = 0;
    {
        std::lock_guard<std::mutex> lock(q->mutex);
        while (n < numEntries && !q->entries.empty())
        {
            wc[n++] = q->entries.front();
            q->entries.pop_front();
        }
    }
    if (n == 0)
    {
        // A NIC works while the application spins on an empty CQ; our progress thread needs
        // the CPU the spinning thread holds (see docs/verbs.md, "Busy polling").
        sched_yield();
    }
    return n;
}

int
ReqNotifyCq(ibv_cq* cq, int /*solicitedOnly*/)
{
    // Solicited-only is treated as "any completion": a superset of the events asked for.
    Cq* q = reinterpret_cast<Cq*>(cq);
    std::lock_guard<std::mutex> lock(q->mutex);
    q->armed = true;
    return 0;
}

} // namespace

void
Cq::Push(const ibv_wc& wc)
{
    Channel* ch = nullptr;
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (entries.size() >= capacity)
        {
            if (!overrun)
            {
                spdlog::error("CQ overrun: more than {} completions not polled; later ones "
                              "are dropped",
                              capacity);
            }
            overrun = true;
            return;
        }
        entries.push_back(wc);
        if (armed && cq.channel != nullptr)
        {
            armed = false;
            ++eventsRaised;
            ch = reinterpret_cast<Channel*>(cq.channel);
        }
    }
    if (ch != nullptr)
    {
        {
            std::lock_guard<std::mutex> lock(ch->mutex);
            ch->events.push_back(this);
        }
        uint64_t one = 1;
        ssize_t n = write(ch->channel.fd, &one, sizeof(one));
        (void)n;
    }
}

void
QpSink::OnCompletion(const Completion& c)
{
    owner->OnCompletion(c);
}

void
Qp::OnCompletion(const Completion& c)
{
    ibv_wc wc{};
    wc.wr_id = c.wrId;
    wc.status = ToIbv(c.status);
    wc.opcode = ToIbv(c.opcode);
    wc.byte_len = c.byteLen;
    wc.qp_num = qp.qp_num;
    wc.src_qp = attr.dest_qp_num;
    if (c.hasImm)
    {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data = c.immData;
    }
    if (c.status != WcStatus::SUCCESS)
    {
        spdlog::debug("QP {}: work request {} completed with {}",
                      qp.qp_num,
                      c.wrId,
                      WcStatusName(c.status));
        if (c.status != WcStatus::WR_FLUSH_ERR)
        {
            qp.state = IBV_QPS_ERR;
        }
    }
    ibv_cq* target = IsReceive(c.opcode) ? qp.recv_cq : qp.send_cq;
    if (target != nullptr)
    {
        reinterpret_cast<Cq*>(target)->Push(wc);
    }
}

int
PostStatusErrno(PostStatus st)
{
    switch (st)
    {
    case PostStatus::OK:
        return 0;
    case PostStatus::QUEUE_FULL:
        return ENOMEM;
    case PostStatus::NOT_SUPPORTED:
        return EOPNOTSUPP;
    default:
        return EINVAL;
    }
}

} // namespace verbs
} // namespace metaroce

extern "C"
{
    ibv_pd* ibv_alloc_pd(ibv_context* ctx)
    {
        auto* p = new Pd();
        p->pd.context = ctx;
        static uint32_t handles = 0;
        p->pd.handle = ++handles;
        return &p->pd;
    }

    int ibv_dealloc_pd(ibv_pd* pd)
    {
        if (reinterpret_cast<Pd*>(pd)->users.load() > 0)
        {
            return EBUSY; // memory regions or QPs still use it
        }
        delete reinterpret_cast<Pd*>(pd);
        return 0;
    }

    ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access)
    {
        constexpr unsigned SUPPORTED = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                       IBV_ACCESS_ZERO_BASED | IBV_ACCESS_RELAXED_ORDERING |
                                       IBV_ACCESS_OPTIONAL_RANGE;
        if (pd == nullptr || (addr == nullptr && length > 0))
        {
            errno = EINVAL;
            return nullptr;
        }
        if ((access & ~SUPPORTED) != 0)
        {
            LogUnsupported("ibv_reg_mr access flags (MW bind, on-demand paging, hugetlb)");
            errno = EOPNOTSUPP;
            return nullptr;
        }
        if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
            !(access & IBV_ACCESS_LOCAL_WRITE))
        {
            errno = EINVAL; // as the Verbs specification requires
            return nullptr;
        }
        Context* c = ToContext(pd->context);
        uint32_t engineAccess = access & (ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE |
                                          ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC);
        if (access & IBV_ACCESS_ZERO_BASED)
        {
            iova = 0;
        }
        MemoryRegion region;
        {
            std::lock_guard<std::mutex> lock(c->runtime->Mutex());
            region = c->runtime->Engine().RegisterMemory(addr, length, engineAccess, iova);
        }
        if (region.lkey == 0)
        {
            errno = EINVAL;
            return nullptr;
        }
        reinterpret_cast<Pd*>(pd)->users++;
        auto* m = new Mr();
        m->mr.context = pd->context;
        m->mr.pd = pd;
        m->mr.addr = addr;
        m->mr.length = length;
        m->mr.handle = region.lkey;
        m->mr.lkey = region.lkey;
        m->mr.rkey = region.rkey;
        return &m->mr;
    }

    ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access)
    {
        return ibv_reg_mr_iova2(pd, addr, length, uint64_t(uintptr_t(addr)), unsigned(access));
    }

    ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access)
    {
        return ibv_reg_mr_iova2(pd, addr, length, iova, unsigned(access));
    }

    int ibv_dereg_mr(ibv_mr* mr)
    {
        if (mr == nullptr)
        {
            return EINVAL;
        }
        Context* c = ToContext(mr->context);
        {
            std::lock_guard<std::mutex> lock(c->runtime->Mutex());
            c->runtime->Engine().DeregisterMemory(mr->lkey);
        }
        reinterpret_cast<Pd*>(mr->pd)->users--;
        delete reinterpret_cast<Mr*>(mr);
        return 0;
    }

    ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx)
    {
        int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
        if (fd < 0)
        {
            return nullptr;
        }
        auto* ch = new Channel();
        ch->channel.context = ctx;
        ch->channel.fd = fd;
        ch->channel.refcnt = 0;
        return &ch->channel;
    }

    int ibv_destroy_comp_channel(ibv_comp_channel* channel)
    {
        if (channel->refcnt != 0)
        {
            return EBUSY;
        }
        close(channel->fd);
        delete reinterpret_cast<Channel*>(channel);
        return 0;
    }

    ibv_cq* ibv_create_cq(ibv_context* ctx,
                          int cqe,
                          void* cqContext,
                          ibv_comp_channel* channel,
                          int compVector)
    {
        if (cqe < 1 || cqe > (1 << 20) || compVector != 0)
        {
            errno = EINVAL;
            return nullptr;
        }
        auto* q = new Cq();
        q->cq.context = ctx;
        q->cq.channel = channel;
        q->cq.cq_context = cqContext;
        q->cq.cqe = cqe;
        q->capacity = size_t(cqe);
        pthread_mutex_init(&q->cq.mutex, nullptr);
        pthread_cond_init(&q->cq.cond, nullptr);
        if (channel != nullptr)
        {
            ++channel->refcnt;
        }
        return &q->cq;
    }

    int ibv_destroy_cq(ibv_cq* cq)
    {
        Cq* q = reinterpret_cast<Cq*>(cq);
        if (q->users.load() > 0)
        {
            return EBUSY; // QPs still complete on it
        }
        if (cq->channel != nullptr)
        {
            Channel* ch = reinterpret_cast<Channel*>(cq->channel);
            {
                std::lock_guard<std::mutex> lock(ch->mutex);
                for (auto it = ch->events.begin(); it != ch->events.end();)
                {
                    it = *it == q ? ch->events.erase(it) : it + 1;
                }
            }
            --cq->channel->refcnt;
        }
        pthread_mutex_destroy(&cq->mutex);
        pthread_cond_destroy(&cq->cond);
        delete q;
        return 0;
    }

    int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cqContext)
    {
        uint64_t v;
        if (read(channel->fd, &v, sizeof(v)) != ssize_t(sizeof(v)))
        {
            return -1; // errno from read (EAGAIN on a non-blocking channel)
        }
        Channel* ch = reinterpret_cast<Channel*>(channel);
        std::lock_guard<std::mutex> lock(ch->mutex);
        if (ch->events.empty())
        {
            errno = EAGAIN; // its CQ was destroyed meanwhile
            return -1;
        }
        Cq* q = ch->events.front();
        ch->events.pop_front();
        *cq = &q->cq;
        *cqContext = q->cq.cq_context;
        return 0;
    }

    void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents)
    {
        Cq* q = reinterpret_cast<Cq*>(cq);
        std::lock_guard<std::mutex> lock(q->mutex);
        q->eventsAcked += nevents;
        cq->comp_events_completed += nevents;
    }

    int ibv_resize_cq(ibv_cq* cq, int cqe)
    {
        if (cqe < 1 || cqe > (1 << 20))
        {
            return EINVAL;
        }
        Cq* q = reinterpret_cast<Cq*>(cq);
        std::lock_guard<std::mutex> lock(q->mutex);
        if (size_t(cqe) < q->entries.size())
        {
            return EINVAL;
        }
        q->capacity = size_t(cqe);
        cq->cqe = cqe;
        return 0;
    }

} // extern "C"

namespace metaroce
{
namespace verbs
{

void InstallQpOps(Context& c);

void
InstallQueueOps(Context& c)
{
    c.vctx.context.ops.poll_cq = PollCq;
    c.vctx.context.ops.req_notify_cq = ReqNotifyCq;
    InstallQpOps(c);
}

} // namespace verbs
} // namespace metaroce
