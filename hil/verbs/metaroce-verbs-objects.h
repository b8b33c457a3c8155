/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_VERBS_OBJECTS_H
#define METAROCE_VERBS_OBJECTS_H

#include "metaroce-verbs-runtime.h"

#include <atomic>
#include <deque>
#include <infiniband/verbs.h>
#include <mutex>
#include <string>
#include <vector>

/**
 * \file
 * The library's objects behind the libibverbs structures. Each starts with the structure the
 * application sees, so the pointer the application holds converts back with a static_cast of
 * the first member (standard layout is not needed: we only go from the member to its owner).
 */

/// Log one line in the library's voice (spdlog).
#define METAROCE_VERBS_UNSUPPORTED(name) metaroce::verbs::LogUnsupported(name)

namespace metaroce
{
namespace verbs
{

/// Log "<name>: not supported by metaroce0" once per entry point.
void LogUnsupported(const char* name);

/// Start logging with the configured level (once per process).
void SetupLogging(const std::string& level);

/// The device context: a real verbs_context, so the inline extended-API helpers work.
struct Context
{
    verbs_context vctx;        //!< what the application sees (vctx.context)
    Runtime* runtime{nullptr}; //!< the engine
};

/// A protection domain.
struct Pd
{
    ibv_pd pd;                 //!< what the application sees
    std::atomic<int> users{0}; //!< MRs and QPs on it (ibv_dealloc_pd: EBUSY while any)
};

/// A memory region.
struct Mr
{
    ibv_mr mr; //!< what the application sees (lkey, rkey are the engine's)
};

struct Cq;

/// A completion channel: an eventfd that counts CQ events, and the CQs that raised them.
struct Channel
{
    ibv_comp_channel channel; //!< what the application sees (fd is an eventfd)
    std::mutex mutex;         //!< guards events
    std::deque<Cq*> events;   //!< CQs with an event not yet taken by ibv_get_cq_event
};

/// A completion queue.
struct Cq
{
    ibv_cq cq;                  //!< what the application sees
    std::mutex mutex;           //!< guards the fields below
    std::deque<ibv_wc> entries; //!< completions not yet polled
    size_t capacity{0};         //!< cqe
    bool armed{false};          //!< ibv_req_notify_cq was called
    bool overrun{false};        //!< more completions arrived than cqe
    uint32_t eventsRaised{0};   //!< events put on the channel
    uint32_t eventsAcked{0};    //!< ibv_ack_cq_events so far
    std::atomic<int> users{0};  //!< QPs that complete on it (ibv_destroy_cq: EBUSY)

    /// Queue \p wc and raise the channel event if armed.
    void Push(const ibv_wc& wc);
};

struct Qp;

/// Routes the engine's completions to its QP.
struct QpSink : public CompletionSink
{
    Qp* owner{nullptr}; //!< the QP

    void OnCompletion(const Completion& c) override;
};

/// A reliable-connected QP on one engine connection (no virtual members: qp is at offset 0).
struct Qp
{
    ibv_qp qp;                      //!< what the application sees (qp_num is the engine's QPN)
    Runtime* runtime{nullptr};      //!< the engine
    ibv_qp_cap cap{};               //!< capacities granted at creation
    bool sigAll{false};             //!< sq_sig_all
    uint32_t accessFlags{0};        //!< qp_access_flags of INIT
    uint8_t portNum{1};             //!< port of INIT
    ibv_qp_attr attr{};             //!< the attributes the application set (ibv_query_qp)
    std::vector<RecvWr> heldRecvs;  //!< posted in INIT, handed to the engine at RTR
    bool connected{false};          //!< Connect() called
    std::vector<uint8_t> inlineBuf; //!< max_send_wr slots of max_inline_data bytes
    MemoryRegion inlineMr;          //!< inlineBuf registered with the engine
    uint64_t inlineNext{0};         //!< next inline slot
    QpSink sink;                    //!< completion routing

    /// Turn an engine completion into a work completion on the right CQ.
    void OnCompletion(const Completion& c);
};

/// \return the owner of \p qp (its first member).
inline Qp*
ToQp(ibv_qp* qp)
{
    return reinterpret_cast<Qp*>(qp);
}

/// \return the owner of \p ctx.
inline Context*
ToContext(ibv_context* ctx)
{
    return reinterpret_cast<Context*>(reinterpret_cast<uint8_t*>(ctx) -
                                      offsetof(verbs_context, context));
}

/// \return errno for a failed post of \p st.
int PostStatusErrno(PostStatus st);

/// Fill the context's operations (the ops the inline helpers of verbs.h call).
void InstallQueueOps(Context& c);

} // namespace verbs
} // namespace metaroce

#endif // METAROCE_VERBS_OBJECTS_H
