/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TRAFFIC_APPLICATION_H
#define METAROCE_TRAFFIC_APPLICATION_H

#include "metaroce-nic.h"

#include "ns3/application.h"
#include "ns3/callback.h"
#include "ns3/object.h"

#include <cstdint>
#include <unordered_map>

/**
 * \file
 * The base of the MetaRoCE traffic applications (MetaRoceFlowApplication,
 * MetaRoceCollectiveApplication): the per-NIC state they share and ending the simulation when
 * all of them have finished.
 */

namespace ns3
{

/**
 * \ingroup metaroce
 * What the traffic applications share on one NIC: a virtual memory region (no bytes behind
 * it: a simulation moves any amount of data without memory), registered on first use, and one
 * sink on the NIC's Completion trace that hands each completion to the application that owns
 * its connection. Aggregated to the NIC's node; MetaRoceTrafficHost::Get creates it.
 */
class MetaRoceTrafficHost : public Object
{
  public:
    /// Receives the completions of one connection.
    typedef Callback<void, const metaroce::Completion&> CompletionSink;

    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceTrafficHost();
    ~MetaRoceTrafficHost() override;

    /**
     * The traffic state of \p nic, created (and its Completion trace connected) on first use.
     * \param nic a NIC attached to its node (one MetaRoCE NIC per node)
     * \return its traffic state
     */
    static Ptr<MetaRoceTrafficHost> Get(Ptr<MetaRoceNic> nic);

    /// \return the NIC's virtual region (registered on the first call).
    const metaroce::MemoryRegion& Region();

    /**
     * Hand the completions of connection \p qpn to \p sink (replacing an earlier sink).
     * \param qpn the connection
     * \param sink the receiver
     */
    void Listen(uint32_t qpn, CompletionSink sink);

  protected:
    void DoDispose() override;

  private:
    /**
     * Completion trace sink.
     * \param completion the completion
     */
    void OnCompletion(const metaroce::Completion& completion);

    MetaRoceNic* m_nic{nullptr};     //!< the NIC (same aggregate: no reference held)
    metaroce::MemoryRegion m_region; //!< the virtual region
    std::unordered_map<uint32_t, CompletionSink> m_sinks; //!< by connection
};

/**
 * \ingroup metaroce
 * Base class of the traffic applications: each finishes once (done or failed), and those with
 * StopWhenDone end the simulation when all of them have finished, whichever helper installed
 * them. In a distributed run a rank sees only the completions of the hosts it owns, so every
 * rank checks every 10 us (simulated) with the others whether all have finished.
 */
class MetaRoceTrafficApplication : public Application
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceTrafficApplication();
    ~MetaRoceTrafficApplication() override;

    /// \return true once the traffic finished (done, failed, or stopped before it started), as
    /// this rank saw it.
    bool IsFinished() const;

    /**
     * Stop the simulator once this and every other application with StopWhenDone have
     * finished.
     * \param stop whether to
     */
    void SetStopWhenDone(bool stop);

    /**
     * Distributed runs: whether the traffic finished, given how many ranks saw it finish.
     * Most traffic (a flow) has finished once any rank saw it finish, and all of it is checked
     * with one sum over the ranks; traffic that spans the hosts of several ranks (a collective)
     * overrides this with a check of its own (a collective call: every rank makes it, in the
     * same order).
     * \return true if this traffic checks itself; then \p finished tells whether it finished
     * \param[out] finished whether it finished on all ranks (only if true is returned)
     */
    virtual bool CheckFinishedOnAllRanks(bool& finished) const;

  protected:
    void DoDispose() override;

    /// Mark the traffic finished (the first call counts) and stop the simulator if asked and
    /// everything is finished.
    void NotifyFinished();

  private:
    bool m_finished{false};     //!< finished as this rank saw it
    bool m_stopWhenDone{false}; //!< takes part in stopping the simulation
};

} // namespace ns3

#endif // METAROCE_TRAFFIC_APPLICATION_H
