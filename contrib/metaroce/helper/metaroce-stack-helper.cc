/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-stack-helper.h"

#include "metaroce-fabric.h"
#include "metaroce-net-device.h"

#include "ns3/abort.h"
#include "ns3/node.h"

namespace ns3
{

MetaRoceStackHelper::MetaRoceStackHelper()
{
    m_factory.SetTypeId(MetaRoceNic::GetTypeId());
}

void
MetaRoceStackHelper::SetNicAttribute(std::string name, const AttributeValue& value)
{
    m_factory.Set(name, value);
}

Ptr<MetaRoceNic>
MetaRoceStackHelper::Install(Ptr<MetaRoceFabric> fabric, uint32_t host) const
{
    Ptr<Node> node = fabric->GetHost(host);
    NS_ABORT_MSG_IF(node->GetObject<MetaRoceNic>(), "host " << host << " already has a NIC");
    Ptr<MetaRoceNic> nic = m_factory.Create<MetaRoceNic>();
    nic->Setup(node, fabric->GetHostAddress(host), fabric->GetHostPorts(host));
    return nic;
}

std::vector<Ptr<MetaRoceNic>>
MetaRoceStackHelper::Install(Ptr<MetaRoceFabric> fabric) const
{
    std::vector<Ptr<MetaRoceNic>> nics;
    nics.reserve(fabric->GetHostCount());
    for (uint32_t i = 0; i < fabric->GetHostCount(); ++i)
    {
        nics.push_back(Install(fabric, i));
    }
    return nics;
}

int64_t
MetaRoceStackHelper::AssignStreams(const std::vector<Ptr<MetaRoceNic>>& nics, int64_t stream)
{
    int64_t used = 0;
    for (const Ptr<MetaRoceNic>& nic : nics)
    {
        used += nic->AssignStreams(stream + used);
    }
    return used;
}

std::pair<uint32_t, uint32_t>
MetaRoceConnectionHelper::Connect(Ptr<MetaRoceNic> a, Ptr<MetaRoceNic> b)
{
    return Connect(a, b, a->GetDefaultConnectionConfig());
}

std::pair<uint32_t, uint32_t>
MetaRoceConnectionHelper::Connect(Ptr<MetaRoceNic> a,
                                  Ptr<MetaRoceNic> b,
                                  const metaroce::ConnectionConfig& cfg)
{
    uint32_t qa = 0;
    uint32_t qb = 0;
    std::string why;
    metaroce::PostStatus st = a->CreateConnection(cfg, qa, &why);
    NS_ABORT_MSG_IF(st != metaroce::PostStatus::OK,
                    "CreateConnection failed: " << metaroce::PostStatusName(st) << " " << why);
    st = b->CreateConnection(cfg, qb, &why);
    NS_ABORT_MSG_IF(st != metaroce::PostStatus::OK,
                    "CreateConnection failed: " << metaroce::PostStatusName(st) << " " << why);
    st = a->Connect(qa, b->GetAddress(), qb);
    NS_ABORT_MSG_IF(st != metaroce::PostStatus::OK,
                    "Connect failed: " << metaroce::PostStatusName(st));
    st = b->Connect(qb, a->GetAddress(), qa);
    NS_ABORT_MSG_IF(st != metaroce::PostStatus::OK,
                    "Connect failed: " << metaroce::PostStatusName(st));
    return {qa, qb};
}

} // namespace ns3
