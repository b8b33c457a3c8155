/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-samplers.h"

#include "metaroce-run-scenario.h"

#include "ns3/metaroce-net-device.h"
#include "ns3/simulator.h"

namespace metaroce_run
{

using namespace ns3;

GoodputSampler::GoodputSampler(const std::vector<Ptr<MetaRoceNic>>& nics,
                               std::vector<uint32_t> tracked,
                               Time interval)
    : m_nics(nics),
      m_tracked(std::move(tracked)),
      m_interval(interval),
      m_last(nics.size(), 0),
      m_lastTime(Seconds(0))
{
    Simulator::Schedule(m_interval, &GoodputSampler::Sample, this);
}

void
GoodputSampler::Finish()
{
    if (Simulator::Now() > m_lastTime)
    {
        Record();
    }
}

const std::vector<pb::GoodputSample>&
GoodputSampler::Samples() const
{
    return m_samples;
}

void
GoodputSampler::Sample()
{
    Record();
    Simulator::Schedule(m_interval, &GoodputSampler::Sample, this);
}

void
GoodputSampler::Record()
{
    const Time now = Simulator::Now();
    const double intervalUs = ToUs(now - m_lastTime);
    std::vector<uint64_t> delta(m_nics.size());
    uint64_t total = 0;
    for (size_t h = 0; h < m_nics.size(); ++h)
    {
        const uint64_t placed = m_nics[h]->GetEngineCounters().Get(metaroce::Counter::BYTES_PLACED);
        delta[h] = placed - m_last[h];
        m_last[h] = placed;
        total += delta[h];
    }
    Add(now, intervalUs, -1, total);
    for (uint32_t h : m_tracked)
    {
        Add(now, intervalUs, static_cast<int32_t>(h), delta[h]);
    }
    m_lastTime = now;
}

void
GoodputSampler::Add(Time now, double intervalUs, int32_t host, uint64_t bytes)
{
    pb::GoodputSample s;
    s.set_time_us(ToUs(now));
    s.set_interval_us(intervalUs);
    s.set_host(host);
    s.set_bytes(bytes);
    s.set_goodput_gbps(intervalUs > 0 ? bytes * 8 / (intervalUs * 1e3) : 0);
    m_samples.push_back(s);
}

FlowGoodputSampler::FlowGoodputSampler(const std::vector<Ptr<MetaRoceNic>>& nics,
                                       Ptr<MetaRoceWorkloadHelper> load,
                                       Time interval)
    : m_nics(nics),
      m_load(load),
      m_interval(interval),
      m_last(load->GetFlows().size(), 0),
      m_lastTx(load->GetFlows().size(), 0),
      m_lastTime(Seconds(0))
{
    Simulator::Schedule(m_interval, &FlowGoodputSampler::Sample, this);
}

void
FlowGoodputSampler::Finish()
{
    if (Simulator::Now() > m_lastTime)
    {
        Record();
    }
}

const std::vector<pb::FlowGoodputSample>&
FlowGoodputSampler::Samples() const
{
    return m_samples;
}

void
FlowGoodputSampler::Sample()
{
    Record();
    Simulator::Schedule(m_interval, &FlowGoodputSampler::Sample, this);
}

void
FlowGoodputSampler::Record()
{
    const Time now = Simulator::Now();
    const double intervalUs = ToUs(now - m_lastTime);
    const std::vector<MetaRoceFlow>& flows = m_load->GetFlows();
    for (size_t i = 0; i < flows.size() && i < m_last.size(); ++i)
    {
        const MetaRoceFlow& f = flows[i];
        uint64_t placed = m_last[i];
        const metaroce::TransportConnection* c =
            f.dstQpn ? m_nics[f.dst]->GetEndpoint().GetConnection(f.dstQpn) : nullptr;
        if (c)
        {
            placed = c->Counters().Get(metaroce::Counter::BYTES_PLACED);
        }
        uint64_t tx = m_lastTx[i];
        const metaroce::TransportConnection* sc =
            f.srcQpn ? m_nics[f.src]->GetEndpoint().GetConnection(f.srcQpn) : nullptr;
        if (sc)
        {
            tx = sc->Counters().Get(metaroce::Counter::TX_DATA) +
                 sc->Counters().Get(metaroce::Counter::TX_RETRANSMIT);
        }
        pb::FlowGoodputSample s;
        s.set_time_us(ToUs(now));
        s.set_interval_us(intervalUs);
        s.set_flow_id(f.id);
        s.set_src(f.src);
        s.set_dst(f.dst);
        s.set_bytes(placed - m_last[i]);
        s.set_goodput_gbps(intervalUs > 0 ? s.bytes() * 8 / (intervalUs * 1e3) : 0);
        s.set_tx_packets(tx - m_lastTx[i]);
        m_samples.push_back(s);
        m_last[i] = placed;
        m_lastTx[i] = tx;
    }
    m_lastTime = now;
}

RunSamplers
StartSamplers(const pb::Output& output,
              Ptr<MetaRoceFabric> fabric,
              const std::vector<Ptr<MetaRoceNic>>& nics,
              Ptr<MetaRoceWorkloadHelper> load,
              const std::vector<uint32_t>& receiving)
{
    RunSamplers samplers;
    const Time interval = FromUs(output.goodput_interval_us());
    samplers.goodput = std::make_unique<GoodputSampler>(
        nics,
        output.per_host_goodput() ? receiving : std::vector<uint32_t>{},
        interval);
    if (output.flow_goodput())
    {
        samplers.flowGoodput = std::make_unique<FlowGoodputSampler>(nics, load, interval);
    }
    for (uint32_t j = 0; j < fabric->GetSwitchCount() && output.queue_peaks(); ++j)
    {
        auto peaks = std::make_unique<QueuePeaks>();
        peaks->sw = fabric->GetSwitch(j);
        peaks->portPeak.assign(peaks->sw->GetNPorts(), 0);
        peaks->portPeakTime.assign(peaks->sw->GetNPorts(), Seconds(0));
        peaks->sw->TraceConnectWithoutContext(
            "Forward",
            MakeBoundCallback(&QueuePeaks::OnForward, peaks.get()));
        samplers.queuePeaks.push_back(std::move(peaks));
    }
    return samplers;
}

void
FinishSamplers(RunSamplers& samplers)
{
    samplers.goodput->Finish();
    if (samplers.flowGoodput)
    {
        samplers.flowGoodput->Finish();
    }
}

void
QueuePeaks::OnForward(QueuePeaks* peaks,
                      Ptr<const Packet> frame,
                      uint32_t /* inPort */,
                      uint32_t outPort,
                      uint8_t /* priority */)
{
    const uint64_t queue = peaks->sw->GetPort(outPort)->GetQueueBytes() + frame->GetSize();
    if (queue > peaks->portPeak[outPort])
    {
        peaks->portPeak[outPort] = queue;
        peaks->portPeakTime[outPort] = Simulator::Now();
    }
    const uint64_t used = peaks->sw->GetBufferUsed();
    if (used > peaks->bufferPeak)
    {
        peaks->bufferPeak = used;
        peaks->bufferPeakTime = Simulator::Now();
    }
}

} // namespace metaroce_run
