/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-flow-application.h"

#include "metaroce-ns3-compat.h"
#include "metaroce-partition.h"
#include "metaroce-stack-helper.h"

#include "ns3/abort.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceFlowApplication");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceFlowApplication);

TypeId
MetaRoceFlowApplication::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceFlowApplication")
            .SetParent<MetaRoceTrafficApplication>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceFlowApplication>()
            .AddAttribute("Bytes",
                          "Payload bytes of the flow.",
                          UintegerValue(1),
                          MakeUintegerAccessor(&MetaRoceFlowApplication::m_bytes),
                          MakeUintegerChecker<uint64_t>(1))
            .AddAttribute("FlowId",
                          "The flow's id in its record (and the immediate data of its last "
                          "WRITE).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&MetaRoceFlowApplication::m_id),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute(
                "Operation",
                "Write: RDMA WRITEs to the remote host; Read: RDMA READs of the "
                "remote host's bytes (storage and parameter-server traffic).",
                EnumValue(WRITE),
                MetaRoceMakeEnumAccessor<Operation>(&MetaRoceFlowApplication::m_operation),
                MakeEnumChecker(WRITE, "Write", READ, "Read"))
            .AddTraceSource("Finished",
                            "The flow finished: the sender's completion of its last message, "
                            "or a failure.",
                            MakeTraceSourceAccessor(&MetaRoceFlowApplication::m_finishedTrace),
                            "ns3::MetaRoceFlowApplication::FlowTracedCallback");
    return tid;
}

MetaRoceFlowApplication::MetaRoceFlowApplication()
{
}

MetaRoceFlowApplication::~MetaRoceFlowApplication()
{
}

void
MetaRoceFlowApplication::DoDispose()
{
    m_remote = nullptr;
    MetaRoceTrafficApplication::DoDispose();
}

void
MetaRoceFlowApplication::SetConnectionConfig(const metaroce::ConnectionConfig& cfg)
{
    m_cfg = cfg;
    m_haveConfig = true;
}

metaroce::ConnectionConfig
MetaRoceFlowApplication::GetConnectionConfig() const
{
    if (m_haveConfig)
    {
        return m_cfg;
    }
    Ptr<MetaRoceNic> nic = LocalNic();
    return nic ? nic->GetDefaultConnectionConfig() : metaroce::ConnectionConfig();
}

void
MetaRoceFlowApplication::SetRemote(Ptr<MetaRoceNic> remote, uint32_t remoteHost)
{
    m_remote = remote;
    m_flow.dst = remoteHost;
}

void
MetaRoceFlowApplication::SetLocalHost(uint32_t localHost)
{
    m_flow.src = localHost;
}

void
MetaRoceFlowApplication::SetIdealFct(Time idealFct)
{
    m_flow.idealFct = idealFct;
}

MetaRoceFlow
MetaRoceFlowApplication::GetFlow() const
{
    MetaRoceFlow f = m_flow;
    f.id = m_id;
    f.bytes = m_bytes;
    if (!m_started)
    {
        f.start = m_startTime;
    }
    return f;
}

Ptr<MetaRoceNic>
MetaRoceFlowApplication::LocalNic() const
{
    Ptr<Node> node = GetNode();
    return node ? node->GetObject<MetaRoceNic>() : nullptr;
}

bool
MetaRoceFlowApplication::CheckFinishedOnAllRanks(bool& /*finished*/) const
{
    return false;
}

void
MetaRoceFlowApplication::StartApplication()
{
    NS_LOG_FUNCTION(this);
    if (m_stopped)
    {
        return;
    }
    m_started = true;
    m_flow.start = Simulator::Now();
    Ptr<MetaRoceNic> a = LocalNic();
    Ptr<MetaRoceNic> b = m_remote;
    NS_ABORT_MSG_IF(!a, "MetaRoceFlowApplication " << m_id << ": its node has no MetaRoceNic");
    NS_ABORT_MSG_IF(!b, "MetaRoceFlowApplication " << m_id << ": no remote NIC (SetRemote)");
    const metaroce::ConnectionConfig cfg = GetConnectionConfig();
    const uint64_t maxMessage = cfg.maxMessageSize;
    const uint64_t messages = (m_bytes + maxMessage - 1) / maxMessage;
    NS_ABORT_MSG_IF(messages > cfg.maxOutstandingWrs,
                    "flow of " << m_bytes << " bytes needs " << messages
                               << " messages: raise MaxMessageSize or MaxOutstandingWrs");
    Ptr<MetaRoceTrafficHost> srcHost = MetaRoceTrafficHost::Get(a);
    Ptr<MetaRoceTrafficHost> dstHost = MetaRoceTrafficHost::Get(b);
    const metaroce::MemoryRegion srcRegion = srcHost->Region();
    const metaroce::MemoryRegion dstRegion = dstHost->Region();
    auto [qa, qb] = MetaRoceConnectionHelper::Connect(a, b, cfg);
    m_flow.srcQpn = qa;
    m_flow.dstQpn = qb;
    srcHost->Listen(qa, MakeCallback(&MetaRoceFlowApplication::OnCompletion, this).Bind(true));
    dstHost->Listen(qb, MakeCallback(&MetaRoceFlowApplication::OnCompletion, this).Bind(false));
    // Distributed runs: every rank sets up both queue pairs (QPNs stay identical across
    // ranks), but only the rank that owns a host posts work on it.
    const bool srcLocal = MetaRoceIsLocal(a->GetNode());
    const bool dstLocal = MetaRoceIsLocal(b->GetNode());
    const bool read = m_operation == READ;
    metaroce::RecvWr rw;
    rw.wrId = m_id;
    if (!read && dstLocal && b->PostRecv(qb, rw) != metaroce::PostStatus::OK)
    {
        Fail();
        return;
    }
    uint64_t offset = 0;
    for (uint64_t m = 0; m < messages && srcLocal; ++m)
    {
        const uint64_t len = std::min<uint64_t>(maxMessage, m_bytes - offset);
        const bool last = m + 1 == messages;
        metaroce::SendWr wr;
        wr.wrId = m_id;
        wr.opcode = read   ? metaroce::WrOpcode::RDMA_READ
                    : last ? metaroce::WrOpcode::RDMA_WRITE_WITH_IMM
                           : metaroce::WrOpcode::RDMA_WRITE;
        wr.sge = {srcRegion.addr, static_cast<uint32_t>(len), srcRegion.lkey};
        wr.remoteAddr = dstRegion.addr;
        wr.rkey = dstRegion.rkey;
        wr.immData = m_id;
        wr.signaled = last;
        const metaroce::PostStatus st = a->PostSend(qa, wr);
        if (st != metaroce::PostStatus::OK)
        {
            NS_LOG_WARN("flow " << m_id << ": PostSend " << metaroce::PostStatusName(st));
            Fail();
            return;
        }
        offset += len;
    }
}

void
MetaRoceFlowApplication::StopApplication()
{
    NS_LOG_FUNCTION(this);
    m_stopped = true;
    if (!m_started)
    {
        NotifyFinished(); // it never will start: nothing to wait for
    }
}

void
MetaRoceFlowApplication::Fail()
{
    m_flow.failed = true;
    NotifyFinished();
    m_finishedTrace(GetFlow());
}

void
MetaRoceFlowApplication::OnCompletion(bool sender, const metaroce::Completion& completion)
{
    if (m_flow.done || m_flow.failed)
    {
        return;
    }
    if (completion.status != metaroce::WcStatus::SUCCESS)
    {
        NS_LOG_WARN("flow " << m_id << ": " << metaroce::WcStatusName(completion.status));
        Fail();
        return;
    }
    if (!sender)
    {
        m_flow.received = true;
        m_flow.receiverFinish = Simulator::Now();
        return;
    }
    if (m_operation == READ)
    {
        m_flow.received = true; // the reader's completion: the bytes are in its memory
        m_flow.receiverFinish = Simulator::Now();
    }
    m_flow.done = true;
    m_flow.finish = Simulator::Now();
    NotifyFinished();
    m_finishedTrace(GetFlow());
}

} // namespace ns3
