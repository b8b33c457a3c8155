/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_SIM_HOST_H
#define METAROCE_HIL_SIM_HOST_H

#include "ns3/ptr.h"

#include <cstdint>
#include <memory>
#include <string>

/**
 * \file
 * The control plane of a simulated host of metaroce-hil-fabric: a metaroce-perf server whose
 * engine is the host's MetaRoceNic in ns-3's real-time simulator, so that an unchanged
 * metaroce-perf client (a real daemon behind a TAP port) runs a test against it.
 *
 * Two threads, no shared state:
 *  - an Asio thread owns the TCP listener and the ControlChannel (framed protobuf, heartbeats,
 *    timeouts). It checks a Hello (the shared CheckHello()), then hands the session to the
 *    simulation with Simulator::ScheduleWithContext (thread-safe with RealtimeSimulatorImpl);
 *  - the simulator thread owns the NIC, the registered buffer and the verification: it creates
 *    the connections, registers a real buffer, posts the receives, checks every received message
 *    against the client's seeded pattern (the shared DataPattern / CheckReceived()) and posts
 *    the Accept and the Verdict back to the Asio thread with boost::asio::post.
 * Messages between the two carry copies; a session number discards those of a session that
 * ended meanwhile. One session at a time; a second client meanwhile gets a Reject.
 */

namespace ns3
{
class MetaRoceNic;
}

namespace metaroce
{
namespace hil
{

/// A simulated host serving metaroce-perf clients (see the file comment).
class SimHostServer
{
  public:
    /// What the host verified over all its sessions (simulator thread; read after the run).
    struct Stats
    {
        uint64_t sessions{0};         //!< sessions that were set up
        uint64_t passed{0};           //!< ... that ended with a clean verdict
        uint64_t failed{0};           //!< ... with errors or aborted
        uint64_t rejected{0};         //!< clients rejected before a session (Asio thread)
        uint64_t messagesVerified{0}; //!< messages of passed sessions, every byte checked
        uint64_t bytesVerified{0};    //!< their bytes
        uint64_t errors{0};           //!< verification errors
        std::string firstError;       //!< the first of them
    };

    /**
     * \param nic the host's NIC (installed, not yet used)
     * \param dataPort UDP port of RoCE datagrams, announced to clients
     * \param timeoutSeconds control-plane silence limit and the wait for stragglers
     */
    SimHostServer(ns3::Ptr<ns3::MetaRoceNic> nic, uint16_t dataPort, double timeoutSeconds);
    ~SimHostServer();
    SimHostServer(const SimHostServer&) = delete;
    SimHostServer& operator=(const SimHostServer&) = delete;

    /**
     * Open the TCP listener on the host's address inside network namespace \p netns (main
     * thread, before the simulation runs).
     * \param controlPort TCP port
     * \param[out] error why it failed
     * \return true on success
     */
    bool Listen(const std::string& netns, uint16_t controlPort, std::string& error);

    /// Start the Asio thread.
    void Start();

    /// Stop and join the Asio thread (after Simulator::Run() returned, before Destroy()).
    void Stop();

    /// \return the statistics (after Stop()).
    Stats GetStats() const;

  private:
    class Impl;
    std::unique_ptr<Impl> m_impl; //!< Asio and simulator halves
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_SIM_HOST_H
