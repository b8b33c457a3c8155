/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_SAMPLERS_H
#define METAROCE_RUN_SAMPLERS_H

#include "metaroce-results.pb.h"

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-workload-helper.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"

#include <cstdint>
#include <memory>
#include <vector>

/**
 * \file
 * What the scenario runner samples while a scenario runs: goodput per host and per flow at
 * fixed intervals, and the peak queues of the switches.
 */

namespace metaroce_run
{

using ns3::MetaRoceFlow;
using ns3::MetaRoceNic;
using ns3::MetaRoceSwitch;
using ns3::MetaRoceWorkloadHelper;
using ns3::Packet;
using ns3::Ptr;
using ns3::Time;
namespace pb = metaroce::results;

/// Samples the payload bytes placed by every NIC at fixed intervals.
class GoodputSampler
{
  public:
    /**
     * \param nics the NICs by host
     * \param tracked hosts that get their own rows
     * \param interval the period
     */
    GoodputSampler(const std::vector<Ptr<MetaRoceNic>>& nics,
                   std::vector<uint32_t> tracked,
                   Time interval);

    /// Take the last (possibly partial) sample at the end of the run.
    void Finish();

    /// \return the samples.
    const std::vector<pb::GoodputSample>& Samples() const;

  private:
    /// The periodic event.
    void Sample();

    /// Record one interval ending now.
    void Record();

    /**
     * Append a sample.
     * \param now interval end
     * \param intervalUs interval length
     * \param host host or -1
     * \param bytes bytes placed
     */
    void Add(Time now, double intervalUs, int32_t host, uint64_t bytes);

    std::vector<Ptr<MetaRoceNic>> m_nics;     //!< NICs by host
    std::vector<uint32_t> m_tracked;          //!< hosts with rows
    Time m_interval;                          //!< period
    std::vector<uint64_t> m_last;             //!< bytes placed at the last sample
    Time m_lastTime;                          //!< time of the last sample
    std::vector<pb::GoodputSample> m_samples; //!< samples
};

/// Samples the payload bytes each flow's receiving connection placed, at fixed intervals
/// (output.flow_goodput).
class FlowGoodputSampler
{
  public:
    /**
     * \param nics the NICs by host
     * \param load the workload (its flows; connections may be created after this)
     * \param interval the period
     */
    FlowGoodputSampler(const std::vector<Ptr<MetaRoceNic>>& nics,
                       Ptr<MetaRoceWorkloadHelper> load,
                       Time interval);

    /// Take the last (possibly partial) sample at the end of the run.
    void Finish();

    /// \return the samples.
    const std::vector<pb::FlowGoodputSample>& Samples() const;

  private:
    /// The periodic event.
    void Sample();

    /// Record one interval ending now.
    void Record();

    std::vector<Ptr<MetaRoceNic>> m_nics;         //!< NICs by host
    Ptr<MetaRoceWorkloadHelper> m_load;           //!< the workload
    Time m_interval;                              //!< period
    std::vector<uint64_t> m_last;                 //!< bytes placed at the last sample, by flow
    std::vector<uint64_t> m_lastTx;               //!< data packets sent at the last sample
    Time m_lastTime;                              //!< time of the last sample
    std::vector<pb::FlowGoodputSample> m_samples; //!< samples
};

/// Peak egress queue of every port and peak shared-buffer occupancy of one switch
/// (output.queue_peaks), from its Forward trace.
struct QueuePeaks
{
    Ptr<MetaRoceSwitch> sw;         //!< the switch
    std::vector<uint64_t> portPeak; //!< bytes, by egress port
    std::vector<Time> portPeakTime; //!< when, by port
    uint64_t bufferPeak{0};         //!< shared buffer bytes
    Time bufferPeakTime;            //!< when

    /**
     * The switch's Forward trace: the frame is charged to the buffer, not yet queued.
     * \param peaks this record
     * \param frame the frame
     * \param outPort its egress port
     */
    static void OnForward(QueuePeaks* peaks,
                          Ptr<const Packet> frame,
                          uint32_t /* inPort */,
                          uint32_t outPort,
                          uint8_t /* priority */);
};

/// Every sampler a scenario asks for (its output section), started before the run.
struct RunSamplers
{
    std::unique_ptr<GoodputSampler> goodput;             //!< goodput.csv (always)
    std::unique_ptr<FlowGoodputSampler> flowGoodput;     //!< output.flow_goodput
    std::vector<std::unique_ptr<QueuePeaks>> queuePeaks; //!< output.queue_peaks, by switch
};

/**
 * Start the samplers of the scenario's output section: goodput (per host for \p receiving
 * when output.per_host_goodput), per flow (output.flow_goodput) and the switches' peak queues
 * (output.queue_peaks).
 * \param output the completed output section
 * \param fabric the fabric
 * \param nics the NICs by host
 * \param load the workload
 * \param receiving the hosts that receive (ReceivingHosts)
 * \return the samplers
 */
RunSamplers StartSamplers(const metaroce::results::Output& output,
                          Ptr<ns3::MetaRoceFabric> fabric,
                          const std::vector<Ptr<MetaRoceNic>>& nics,
                          Ptr<MetaRoceWorkloadHelper> load,
                          const std::vector<uint32_t>& receiving);

/**
 * Take the last (possibly partial) samples at the end of the run.
 * \param samplers the samplers
 */
void FinishSamplers(RunSamplers& samplers);

} // namespace metaroce_run

#endif // METAROCE_RUN_SAMPLERS_H
