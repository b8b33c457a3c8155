/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-gilbert-elliott-error-model.h"

#include "ns3/double.h"
#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceGilbertElliottErrorModel");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceGilbertElliottErrorModel);

TypeId
MetaRoceGilbertElliottErrorModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceGilbertElliottErrorModel")
            .SetParent<ErrorModel>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceGilbertElliottErrorModel>()
            .AddAttribute("GoodLossRate",
                          "h_G: probability that a packet is lost in the GOOD state.",
                          DoubleValue(0.0),
                          MakeDoubleAccessor(&MetaRoceGilbertElliottErrorModel::m_goodLossRate),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("BadLossRate",
                          "h_B: probability that a packet is lost in the BAD state.",
                          DoubleValue(1.0),
                          MakeDoubleAccessor(&MetaRoceGilbertElliottErrorModel::m_badLossRate),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("GoodToBad",
                          "p: probability of moving from GOOD to BAD after each packet.",
                          DoubleValue(0.001),
                          MakeDoubleAccessor(&MetaRoceGilbertElliottErrorModel::m_goodToBad),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("BadToGood",
                          "r: probability of moving from BAD to GOOD after each packet (mean "
                          "burst length 1/r packets).",
                          DoubleValue(0.1),
                          MakeDoubleAccessor(&MetaRoceGilbertElliottErrorModel::m_badToGood),
                          MakeDoubleChecker<double>(0.0, 1.0));
    return tid;
}

MetaRoceGilbertElliottErrorModel::MetaRoceGilbertElliottErrorModel()
    : m_uniform(CreateObject<UniformRandomVariable>())
{
    NS_LOG_FUNCTION(this);
}

MetaRoceGilbertElliottErrorModel::~MetaRoceGilbertElliottErrorModel()
{
    NS_LOG_FUNCTION(this);
}

double
MetaRoceGilbertElliottErrorModel::GetMeanLossRate() const
{
    const double sum = m_goodToBad + m_badToGood;
    if (sum == 0)
    {
        return m_goodLossRate; // the chain never leaves GOOD
    }
    return (m_badToGood * m_goodLossRate + m_goodToBad * m_badLossRate) / sum;
}

MetaRoceGilbertElliottErrorModel::State
MetaRoceGilbertElliottErrorModel::GetState() const
{
    return m_state;
}

int64_t
MetaRoceGilbertElliottErrorModel::AssignStreams(int64_t stream)
{
    m_uniform->SetStream(stream);
    return 1;
}

bool
MetaRoceGilbertElliottErrorModel::DoCorrupt(Ptr<Packet> p)
{
    NS_LOG_FUNCTION(this << p);
    const bool lost = m_uniform->GetValue() < (m_state == GOOD ? m_goodLossRate : m_badLossRate);
    const double move = m_uniform->GetValue();
    if (m_state == GOOD && move < m_goodToBad)
    {
        m_state = BAD;
    }
    else if (m_state == BAD && move < m_badToGood)
    {
        m_state = GOOD;
    }
    return lost;
}

void
MetaRoceGilbertElliottErrorModel::DoReset()
{
    m_state = GOOD;
}

} // namespace ns3
