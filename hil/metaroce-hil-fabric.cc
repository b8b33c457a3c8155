/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-hil-fabric: a mixed run. A simulated leaf-spine fabric (MetaRoceTopologyHelper:
 * MetaRoceSwitch ECMP, ECN marking, shared buffers, link loss and failures) runs in ns-3's
 * real-time simulator, and TAP devices take the place of some of its hosts, so that real
 * daemons (metaroce-perf / metaroce-hild in network namespaces) exchange frames through the
 * simulated switches. See docs/hil.md, "Mixed runs".
 *
 * Each TAP device is created by this program (inside a named network namespace if asked)
 * with the identity of one simulated host: its IPv4 address and its MAC address. The
 * descriptor goes to a TapFramePipe (a reader thread that hands the simulator the frames in
 * batches, metaroce-hil-tap-pipe.h), and a TapBridge joins that pipe to the host's
 * MetaRoceNetDevice port:
 *  - RoCE datagrams (IPv4/UDP to the data port) from the TAP enter the fabric unchanged
 *    (byte-exact frames, ECN bits included) and frames the fabric delivers to the host go to
 *    the TAP unchanged (with the CE marks the switches set);
 *  - ARP requests from the TAP are answered by the bridge (proxy ARP: every other address is
 *    behind the leaf switch's port);
 *  - other IPv4 traffic between TAP hosts (the TCP control plane, ping) bypasses the fabric:
 *    the switches forward only RoCE datagrams.
 */

#include "metaroce-hil-fabric-options.h"
#include "metaroce-hil-lag.h"
#include "metaroce-hil-options.h"
#include "metaroce-hil-sim-host.h"
#include "metaroce-hil-tap-pipe.h"
#include "metaroce-hil-tap.h"

#include "ns3/core-module.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-frame.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-simulator-impl.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/network-module.h"
#include "ns3/realtime-simulator-impl.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

using namespace ns3;

namespace
{

/// Set by SIGINT/SIGTERM; polled by a simulation event.
volatile std::sig_atomic_t g_stopRequested = 0;

void
OnSignal(int)
{
    g_stopRequested = 1;
}

/// \return "a.b.c.d".
std::string
Ipv4Text(uint32_t ip)
{
    return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xff) + "." +
           std::to_string((ip >> 8) & 0xff) + "." + std::to_string(ip & 0xff);
}

/// \return "aa:bb:..".
std::string
MacText(const metaroce::MacAddress& mac)
{
    char text[18];
    std::snprintf(text,
                  sizeof(text),
                  "%02x:%02x:%02x:%02x:%02x:%02x",
                  mac.bytes[0],
                  mac.bytes[1],
                  mac.bytes[2],
                  mac.bytes[3],
                  mac.bytes[4],
                  mac.bytes[5]);
    return text;
}

/// \return \p mac as an engine MacAddress.
metaroce::MacAddress
ToEngineMac(Mac48Address mac)
{
    metaroce::MacAddress m;
    mac.CopyTo(m.bytes);
    return m;
}

/// The lag of the real-time simulator: set up in main() before Simulator::Run().
std::unique_ptr<metaroce::hil::LagMonitor> g_lag;
/// The real-time simulator (--simulator ns3), for its wall clock.
Ptr<RealtimeSimulatorImpl> g_realtime;
/// The real-time simulator (--simulator metaroce), for its wall clock.
Ptr<MetaRoceRealtimeSimulatorImpl> g_metaroceRealtime;

/// \return how late the running event is, microseconds (how far the simulation lags).
double
CurrentLagUs()
{
    const Time wall =
        g_metaroceRealtime ? g_metaroceRealtime->RealtimeNow() : g_realtime->RealtimeNow();
    return double((wall - Simulator::Now()).GetNanoSeconds()) / 1e3;
}

/// Record how late the running event is, with \p queued frames waiting behind it.
void
RecordLag(uint64_t queued)
{
    g_lag->Record(Simulator::Now().GetSeconds(), CurrentLagUs(), queued);
}

/// --lag-ecn-us: CE on RoCE frames entering from a TAP while the simulation lags by more.
double g_lagEcnUs = 0;

class TapBridge;

/// The TAP hosts by address, for the control-plane bypass.
std::map<uint32_t, TapBridge*> g_bridgeByIp;

/**
 * Joins one TAP device (through a TapFramePipe) to the MetaRoceNetDevice port of one
 * simulated host, whose IPv4 and MAC addresses the TAP's kernel interface carries.
 */
class TapBridge
{
  public:
    /// What a bridge counts.
    struct Counters
    {
        uint64_t fromTapFrames{0};  //!< frames read from the TAP
        uint64_t toFabricFrames{0}; //!< RoCE frames handed to the fabric
        uint64_t toFabricBytes{0};  //!< their bytes
        uint64_t hostQueueDrops{0}; //!< RoCE frames dropped: host port queue full
        uint64_t toTapFrames{0};    //!< frames the fabric delivered, written to the TAP
        uint64_t toTapBytes{0};     //!< their bytes
        uint64_t toTapCe{0};        //!< ... of them carrying CE
        uint64_t lagCe{0};        //!< RoCE frames from the TAP marked CE for the lag (--lag-ecn-us)
        uint64_t bypassFrames{0}; //!< non-RoCE IPv4 frames passed to another TAP host
        uint64_t arpReplies{0};   //!< ARP requests answered
        uint64_t ignored{0};      //!< frames dropped: IPv6, no TAP host at the address, ...
    };

    /**
     * \param port the host's fabric port
     * \param tapFd the TAP descriptor (not owned)
     * \param context the simulation context (node id) of the TAP's frames
     * \param ip the host address
     * \param dataPort UDP port of RoCE datagrams
     * \param queueLimit bytes the host port may queue before frames from the TAP are dropped
     * \param controlOnly the host runs the engine (a MetaRoceNic owns the port): the TAP only
     *        carries the control plane (bypassed IPv4) to the program's server, no RoCE
     */
    TapBridge(Ptr<MetaRoceNetDevice> port,
              int tapFd,
              uint32_t context,
              uint32_t ip,
              uint16_t dataPort,
              uint64_t queueLimit,
              bool controlOnly = false)
        : m_port(port),
          m_pipe(tapFd,
                 metaroce::hil::TapFramePipe::DEFAULT_CAPACITY,
                 [this, context]() {
                     // (the reader thread: one drain event per batch of frames)
                     Simulator::ScheduleWithContext(context, Time(0), &TapBridge::DrainTap, this);
                 }),
          m_ip(ip),
          m_dataPort(dataPort),
          m_queueLimit(queueLimit),
          m_hostMac(ToEngineMac(Mac48Address::ConvertFrom(port->GetAddress()))),
          m_gatewayMac(ToEngineMac(port->GetPeerMac())),
          m_controlOnly(controlOnly)
    {
        if (!controlOnly)
        {
            m_port->SetFrameReceiveCallback(MakeCallback(&TapBridge::FromFabric, this));
        }
        g_bridgeByIp[ip] = this;
    }

    /// Start reading the TAP. \return false with \p error if it could not.
    bool Start(std::string& error)
    {
        return m_pipe.Start(error);
    }

    /// Stop reading the TAP (after the simulation: no more drain events).
    void Stop()
    {
        m_pipe.Stop();
    }

    /// \return the pipe's counters.
    metaroce::hil::TapFramePipe::Counters PipeCounters() const
    {
        return m_pipe.GetCounters();
    }

    /// \return why the TAP's reader stopped early, or "".
    std::string ReaderError() const
    {
        return m_pipe.ReaderError();
    }

    /// \return the counters.
    const Counters& GetCounters() const
    {
        return m_counters;
    }

    /// \return the host address.
    uint32_t GetIp() const
    {
        return m_ip;
    }

    /// \return frames read from the TAP and not yet handled by the simulator.
    uint64_t PendingFrames() const
    {
        return m_pipe.Pending();
    }

    /// Write \p frame (with its Ethernet header) to the TAP.
    void ToTap(const uint8_t* frame, uint32_t size)
    {
        if (size < metaroce::ETHERNET_HEADER_SIZE)
        {
            return;
        }
        m_pipe.Write(frame, size); // (a refused frame is counted, as a lost one)
    }

    /// Deliver a bypassed IPv4 frame from another TAP host to this one.
    void Bypass(uint8_t* frame, uint32_t size)
    {
        std::memcpy(frame + metaroce::ETHERNET_DST_OFFSET, m_hostMac.bytes, 6);
        std::memcpy(frame + metaroce::ETHERNET_SRC_OFFSET, m_gatewayMac.bytes, 6);
        ++m_counters.bypassFrames;
        ToTap(frame, size);
    }

  private:
    /// The frames the reader thread queued (one event per batch).
    void DrainTap()
    {
        m_pipe.Drain([this](uint8_t* frame, uint32_t size, size_t left) {
            RecordLag(left);
            FromTap(frame, size);
        });
    }

    /// A frame the fabric delivered to the host: to the TAP, unchanged.
    void FromFabric(Ptr<MetaRoceNetDevice>, Ptr<Packet> frame)
    {
        RecordLag(m_pipe.Pending());
        const uint32_t size = frame->GetSize();
        m_buffer.resize(size);
        frame->CopyData(m_buffer.data(), size);
        metaroce::ParsedFrame parsed;
        if (metaroce::ParseFrame(m_buffer.data(), size, parsed) == metaroce::FrameStatus::OK &&
            parsed.meta.ecn == metaroce::Ecn::CE)
        {
            ++m_counters.toTapCe;
        }
        ++m_counters.toTapFrames;
        m_counters.toTapBytes += size;
        ToTap(m_buffer.data(), size);
    }

    /// A frame from the TAP, with its Ethernet header (changed in place: CE, bypass MACs).
    void FromTap(uint8_t* frame, uint32_t size)
    {
        ++m_counters.fromTapFrames;
        if (size < metaroce::ETHERNET_HEADER_SIZE)
        {
            ++m_counters.ignored;
            return;
        }
        const uint16_t protocol = uint16_t(frame[metaroce::ETHERNET_TYPE_OFFSET] << 8 |
                                           frame[metaroce::ETHERNET_TYPE_OFFSET + 1]);

        metaroce::MacAddress senderMac;
        uint32_t senderIp = 0;
        uint32_t targetIp = 0;
        if (metaroce::hil::ParseArpRequest(frame, size, senderMac, senderIp, targetIp))
        {
            if (targetIp != m_ip && senderIp == m_ip)
            {
                uint8_t reply[metaroce::hil::ARP_FRAME_SIZE];
                metaroce::hil::BuildArpReply(reply, m_gatewayMac, targetIp, senderMac, senderIp);
                ++m_counters.arpReplies;
                ToTap(reply, sizeof(reply));
            }
            return;
        }
        if (protocol != metaroce::ETHERTYPE_IPV4)
        {
            ++m_counters.ignored;
            return;
        }
        metaroce::ParsedFrame parsed;
        metaroce::FrameStatus st = metaroce::ParseFrame(frame, size, parsed);
        if (st == metaroce::FrameStatus::OK && parsed.meta.dstPort == m_dataPort && m_controlOnly)
        {
            ++m_counters.ignored; // the simulated host's RoCE traffic is its NIC's
            return;
        }
        if (st == metaroce::FrameStatus::OK && parsed.meta.dstPort == m_dataPort)
        {
            bool marked = false;
            if (g_lagEcnUs > 0 && parsed.meta.ecn != metaroce::Ecn::NOT_ECT &&
                parsed.meta.ecn != metaroce::Ecn::CE && CurrentLagUs() > g_lagEcnUs)
            {
                // The simulation runs behind the wall clock: the frames wait in the TAP's
                // queue and the simulator's, a queue no simulated switch sees. Mark them as a
                // switch marks a deep queue, so that the real senders slow down (our model
                // [M]; docs/hil.md, "Keeping up"). The ICRC does not cover the ECN bits.
                metaroce::SetIpv4Ecn(frame + metaroce::ETHERNET_HEADER_SIZE, metaroce::Ecn::CE);
                marked = true; // counted once the frame is in the fabric
            }
            Ptr<Packet> fabricFrame = MetaRoceCreateFrame(frame, size, 0, 0);
            const uint8_t priority = m_port->ClassifyFrame(fabricFrame);
            if (m_port->GetQueueBytes() + size > m_queueLimit)
            {
                ++m_counters.hostQueueDrops;
                return;
            }
            if (m_port->Enqueue(fabricFrame, priority))
            {
                ++m_counters.toFabricFrames;
                m_counters.toFabricBytes += size;
                m_counters.lagCe += marked ? 1 : 0;
            }
            else
            {
                ++m_counters.hostQueueDrops; // link down or too large: the device counted it
            }
            return;
        }
        // Not a RoCE datagram: the control plane (TCP), ping, ... between TAP hosts.
        if (size >= metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_HEADER_SIZE)
        {
            const uint8_t* ip = frame + metaroce::ETHERNET_HEADER_SIZE;
            uint32_t dst =
                uint32_t(ip[16]) << 24 | uint32_t(ip[17]) << 16 | uint32_t(ip[18]) << 8 | ip[19];
            auto it = g_bridgeByIp.find(dst);
            if (it != g_bridgeByIp.end() && it->second != this)
            {
                it->second->Bypass(frame, size);
                return;
            }
        }
        ++m_counters.ignored;
    }

    Ptr<MetaRoceNetDevice> m_port;      //!< the host's fabric port
    metaroce::hil::TapFramePipe m_pipe; //!< the TAP's frames
    uint32_t m_ip;                      //!< host address
    uint16_t m_dataPort;                //!< RoCE UDP port
    uint64_t m_queueLimit;              //!< host port queue limit, bytes
    metaroce::MacAddress m_hostMac;     //!< the host's (and the TAP's) MAC
    metaroce::MacAddress m_gatewayMac;  //!< the leaf switch port's MAC
    bool m_controlOnly;                 //!< a control TAP of a simulated host
    std::vector<uint8_t> m_buffer;      //!< a frame from the fabric
    Counters m_counters;                //!< counters
};

/// Every \p period: record the lag (with the longest TAP queue) and stop on a signal.
void
Watch(Time period)
{
    uint64_t queued = 0;
    for (const auto& entry : g_bridgeByIp)
    {
        queued = std::max(queued, entry.second->PendingFrames());
    }
    RecordLag(queued);
    if (g_stopRequested)
    {
        Simulator::Stop();
        return;
    }
    Simulator::Schedule(period, &Watch, period);
}

/// Frames a failed link had carried (both directions) when it failed.
std::vector<uint64_t> g_framesBeforeFailure;

/// Record what link \p link had carried, as failure \p index.
void
SnapshotLink(size_t index, MetaRoceLink link)
{
    g_framesBeforeFailure[index] =
        link.deviceA->GetCounters().txFrames + link.deviceB->GetCounters().txFrames;
}

} // namespace

int
main(int argc, char* argv[])
{
    using metaroce::hil::FailSpec;
    using metaroce::hil::TapSpec;
    metaroce::hil::FabricOptions opts;
    const int status = metaroce::hil::ParseFabricOptions(argc, argv, opts);
    if (status >= 0)
    {
        return status;
    }
    auto usageError = [](const std::string& what) {
        std::fprintf(stderr, "metaroce-hil-fabric: %s (see --help)\n", what.c_str());
        return metaroce::hil::EXIT_USAGE;
    };

    GlobalValue::Bind("SimulatorImplementationType",
                      StringValue(opts.simulator == "ns3" ? "ns3::RealtimeSimulatorImpl"
                                                          : "ns3::MetaRoceRealtimeSimulatorImpl"));
    if (opts.simulator != "ns3")
    {
        // The module's 4-ary heap, as the simulated fabrics use (ns-3's default, the
        // MapScheduler's red-black tree, took about 8 % of the fabric's CPU samples in a mixed run
        // at 1 KiB); --simulator ns3 keeps all of ns-3's defaults, for comparison.
        ObjectFactory scheduler;
        scheduler.SetTypeId("ns3::MetaRoceScheduler");
        Simulator::SetScheduler(scheduler);
    }
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(true));
    RngSeedManager::SetRun(opts.seed);

    // --slowdown K: every time in the fabric K times longer (serialization, propagation, the
    // failure schedule); sizes (queues, ECN thresholds) unchanged.
    const DataRate hostLinkRate(
        uint64_t(double(DataRate(opts.hostRate).GetBitRate()) / opts.slowdown));
    const DataRate fabricLinkRate(
        uint64_t(double(DataRate(opts.fabricRate).GetBitRate()) / opts.slowdown));
    const Time delay = Time(opts.linkDelay) * opts.slowdown;
    for (FailSpec& f : opts.failLinks)
    {
        f.start *= opts.slowdown;
        f.stop = f.stop < 0 ? f.stop : f.stop * opts.slowdown;
    }
    MetaRoceTopologyHelper topo;
    topo.SetHostLinkRate(hostLinkRate);
    topo.SetFabricLinkRate(fabricLinkRate);
    topo.SetLinkDelay(delay);
    topo.SetEcn(opts.ecn, opts.ecnKmin, opts.ecnKmax, opts.ecnPmax);
    Ptr<MetaRoceFabric> fabric =
        topo.BuildLeafSpine(opts.leaves, opts.hostsPerLeaf, opts.oversubscription);
    const uint32_t switches = fabric->GetSwitchCount();
    const uint32_t spines = switches - opts.leaves;
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        if (opts.loss > 0 && link.portA != MetaRoceSwitch::NO_PORT &&
            link.portB != MetaRoceSwitch::NO_PORT)
        {
            fabric->SetBernoulliLoss(link.channel, opts.loss);
        }
    }
    for (const FailSpec& f : opts.failLinks)
    {
        if (f.leaf >= opts.leaves || f.spine >= spines)
        {
            return usageError("--fail-link " + std::to_string(f.leaf) + ":" +
                              std::to_string(f.spine) + ": there are " +
                              std::to_string(opts.leaves) + " leaves and " +
                              std::to_string(spines) + " spines");
        }
        Time stop = f.stop < 0 ? Time::Max() : Seconds(f.stop);
        Ptr<Node> leafNode = fabric->GetSwitchNode(f.leaf);
        Ptr<Node> spineNode = fabric->GetSwitchNode(opts.leaves + f.spine);
        topo.FailLink(leafNode, spineNode, Seconds(f.start), stop);
        // Report whether traffic was using the link when it failed.
        g_framesBeforeFailure.push_back(0);
        for (const MetaRoceLink& link : fabric->GetLinks())
        {
            if ((link.nodeA == leafNode && link.nodeB == spineNode) ||
                (link.nodeA == spineNode && link.nodeB == leafNode))
            {
                Simulator::Schedule(Seconds(f.start),
                                    &SnapshotLink,
                                    g_framesBeforeFailure.size() - 1,
                                    link);
            }
        }
    }
    fabric->AssignStreams(1000);
    if (!opts.pcap.empty())
    {
        topo.EnablePcapHosts(opts.pcap);
    }

    // TAP devices with the identity of their hosts; then the simulated hosts, each with a
    // control TAP that carries only its control plane.
    std::vector<std::unique_ptr<TapBridge>> bridges;
    std::vector<std::string> tapNames;
    std::vector<std::unique_ptr<metaroce::hil::SimHostServer>> simServers;
    std::vector<uint32_t> simIps;
    for (size_t i = 0; i < opts.taps.size() + opts.simHosts.size(); ++i)
    {
        const bool sim = i >= opts.taps.size();
        const TapSpec& spec = sim ? opts.simHosts[i - opts.taps.size()] : opts.taps[i];
        const uint32_t leaf = uint32_t(i % opts.leaves);
        const uint32_t slot = uint32_t(i / opts.leaves);
        const uint32_t ip = (10u << 24) | ((leaf / 256) << 16) | ((leaf % 256) << 8) | (slot + 1);
        const int64_t host = fabric->FindHost(ip);
        if (host < 0)
        {
            std::fprintf(stderr, "metaroce-hil-fabric: no host %s\n", Ipv4Text(ip).c_str());
            return 1;
        }
        Ptr<MetaRoceNetDevice> port = fabric->GetHostPorts(uint32_t(host)).at(0);
        const metaroce::MacAddress mac = ToEngineMac(Mac48Address::ConvertFrom(port->GetAddress()));
        std::string error;
        std::string name;
        int fd = -1;
        {
            metaroce::hil::NetnsScope scope(spec.netns);
            if (!scope.Ok())
            {
                std::fprintf(stderr, "metaroce-hil-fabric: %s\n", scope.Why().c_str());
                return 1;
            }
            fd = metaroce::hil::OpenTap(spec.name, name, error);
            if (fd < 0 || !metaroce::hil::SetInterfaceMac(name, mac, error) ||
                !metaroce::hil::SetInterfaceMtu(name, port->GetMtu(), error) ||
                !metaroce::hil::SetInterfaceAddress(name, ip, opts.prefixLength, error) ||
                !metaroce::hil::SetInterfaceUp(name, true, error))
            {
                std::fprintf(stderr,
                             "metaroce-hil-fabric: TAP %s: %s\n",
                             spec.name.c_str(),
                             error.c_str());
                return 1;
            }
        }
        Ptr<MetaRoceNic> nic;
        if (sim)
        {
            // The NIC drives the host's fabric port; the TAP carries its control plane. Its peers
            // are real daemons, which compute and check the ICRC.
            MetaRoceStackHelper stack;
            stack.SetNicAttribute("Icrc", BooleanValue(true));
            nic = stack.Install(fabric, uint32_t(host));
            MetaRoceStackHelper::AssignStreams({nic}, 2000 + int64_t(i));
        }
        bridges.push_back(std::make_unique<TapBridge>(port,
                                                      fd,
                                                      fabric->GetHost(uint32_t(host))->GetId(),
                                                      ip,
                                                      uint16_t(opts.dataPort),
                                                      uint64_t(opts.hostQueueKb) * 1024,
                                                      sim));
        tapNames.push_back((spec.netns.empty() ? "" : spec.netns + ":") + name);
        if (sim)
        {
            auto server = std::make_unique<metaroce::hil::SimHostServer>(nic,
                                                                         uint16_t(opts.dataPort),
                                                                         opts.simTimeout);
            if (!server->Listen(spec.netns, uint16_t(opts.controlPort), error))
            {
                std::fprintf(stderr, "metaroce-hil-fabric: %s\n", error.c_str());
                return 1;
            }
            simServers.push_back(std::move(server));
            simIps.push_back(ip);
            std::printf("sim host %s mac %s (leaf %u): engine in the simulation, control plane "
                        "on %s:%u through control tap %s\n",
                        Ipv4Text(ip).c_str(),
                        MacText(mac).c_str(),
                        leaf,
                        Ipv4Text(ip).c_str(),
                        opts.controlPort,
                        tapNames.back().c_str());
            continue;
        }
        std::printf("tap %s = host %s mac %s (leaf %u) gateway mac %s mtu %u\n",
                    tapNames.back().c_str(),
                    Ipv4Text(ip).c_str(),
                    MacText(mac).c_str(),
                    leaf,
                    MacText(ToEngineMac(port->GetPeerMac())).c_str(),
                    port->GetMtu());
    }
    std::printf("fabric: %u leaves x %u hosts, %u spines, host %.6g Gbps, fabric %.6g Gbps, delay "
                "%.6g us, loss %g per leaf-spine link, ECN %s (Kmin %u Kmax %u Pmax %g), %zu link "
                "failure(s), slowdown %g%s\n",
                opts.leaves,
                opts.hostsPerLeaf,
                spines,
                double(hostLinkRate.GetBitRate()) / 1e9,
                double(fabricLinkRate.GetBitRate()) / 1e9,
                delay.GetMicroSeconds() + 0.0,
                opts.loss,
                opts.ecn ? "on" : "off",
                opts.ecnKmin,
                opts.ecnKmax,
                opts.ecnPmax,
                opts.failLinks.size(),
                opts.slowdown,
                opts.slowdown > 1 ? " (rates and times above are the slowed ones)" : "");
    std::fflush(stdout);

    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    g_lag =
        std::make_unique<metaroce::hil::LagMonitor>(opts.maxLagMs * 1e3,
                                                    metaroce::hil::TapFramePipe::DEFAULT_CAPACITY);
    g_lagEcnUs = opts.lagEcnUs;
    g_realtime = DynamicCast<RealtimeSimulatorImpl>(Simulator::GetImplementation());
    g_metaroceRealtime = DynamicCast<MetaRoceRealtimeSimulatorImpl>(Simulator::GetImplementation());
    if (!g_realtime && !g_metaroceRealtime)
    {
        std::fprintf(stderr, "metaroce-hil-fabric: no real-time simulator implementation\n");
        return 1;
    }
    Simulator::Schedule(MilliSeconds(10), &Watch, MilliSeconds(10));
    if (opts.duration > 0)
    {
        Simulator::Stop(Seconds(opts.duration));
    }
    for (auto& server : simServers)
    {
        server->Start();
    }
    for (size_t i = 0; i < bridges.size(); ++i)
    {
        std::string error;
        if (!bridges[i]->Start(error))
        {
            std::fprintf(stderr,
                         "metaroce-hil-fabric: TAP %s: %s\n",
                         tapNames[i].c_str(),
                         error.c_str());
            return 1;
        }
    }
    Simulator::Run();
    for (auto& bridge : bridges)
    {
        bridge->Stop(); // (no drain event after the simulation)
    }
    const double simSeconds = Simulator::Now().GetSeconds();
    for (auto& server : simServers)
    {
        server->Stop(); // no control action reaches the simulation any more
    }

    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const double cpuSeconds =
        double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
        double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6; // all threads, user + sys
    std::printf("---- metaroce-hil-fabric summary: %.3f s simulated, cpu %.2f s ----\n",
                simSeconds,
                cpuSeconds);
    const metaroce::hil::LagMonitor::Report lag = g_lag->GetReport();
    std::printf("real-time lag: max %.1f us, mean %.1f us over %llu events, at most %llu frames "
                "queued\n",
                lag.maxLagUs,
                lag.meanLagUs,
                (unsigned long long)lag.observations,
                (unsigned long long)lag.maxQueued);
    std::printf("real time: %s\n", g_lag->Verdict(opts.slowdown).c_str());
    for (size_t i = 0; i < bridges.size(); ++i)
    {
        const TapBridge::Counters& c = bridges[i]->GetCounters();
        std::printf("tap %s (%s): from tap %llu frames, to fabric %llu frames %llu bytes "
                    "(%llu marked ce for the lag), host "
                    "queue drops %llu; to tap %llu frames %llu bytes, ce %llu; bypass %llu, arp "
                    "replies %llu, ignored %llu\n",
                    tapNames[i].c_str(),
                    Ipv4Text(bridges[i]->GetIp()).c_str(),
                    (unsigned long long)c.fromTapFrames,
                    (unsigned long long)c.toFabricFrames,
                    (unsigned long long)c.toFabricBytes,
                    (unsigned long long)c.lagCe,
                    (unsigned long long)c.hostQueueDrops,
                    (unsigned long long)c.toTapFrames,
                    (unsigned long long)c.toTapBytes,
                    (unsigned long long)c.toTapCe,
                    (unsigned long long)c.bypassFrames,
                    (unsigned long long)c.arpReplies,
                    (unsigned long long)c.ignored);
        const metaroce::hil::TapFramePipe::Counters p = bridges[i]->PipeCounters();
        std::printf("tap %s: read %llu frames in %llu batches, %llu dropped (%zu frames queued "
                    "already), %llu written, %llu refused by the TAP%s%s\n",
                    tapNames[i].c_str(),
                    (unsigned long long)p.read,
                    (unsigned long long)p.wakeUps,
                    (unsigned long long)p.queueDrops,
                    metaroce::hil::TapFramePipe::DEFAULT_CAPACITY,
                    (unsigned long long)p.written,
                    (unsigned long long)p.writeErrors,
                    bridges[i]->ReaderError().empty() ? "" : "; reader stopped: ",
                    bridges[i]->ReaderError().c_str());
    }
    uint64_t totalEcn = 0;
    uint64_t totalDrops = 0;
    for (uint32_t s = 0; s < switches; ++s)
    {
        Ptr<MetaRoceSwitch> sw = fabric->GetSwitch(s);
        std::string role = s < opts.leaves ? "leaf " + std::to_string(s)
                                           : "spine " + std::to_string(s - opts.leaves);
        for (uint32_t p = 0; p < sw->GetNPorts(); ++p)
        {
            const MetaRoceSwitch::Counters& c = sw->GetPortCounters(p);
            if (c.rxFrames == 0 && c.enqueuedFrames == 0 && c.TotalDrops() == 0)
            {
                continue;
            }
            std::string drops;
            for (uint32_t r = 0; r < METAROCE_DROP_REASON_COUNT; ++r)
            {
                if (c.drops[r] != 0)
                {
                    drops += std::string(" ") +
                             MetaRoceDropReasonName(static_cast<MetaRoceDropReason>(r)) + " " +
                             std::to_string(c.drops[r]);
                }
            }
            std::printf("%s port %u: rx %llu frames, tx %llu frames, ecn marked %llu, drops "
                        "%llu%s\n",
                        role.c_str(),
                        p,
                        (unsigned long long)c.rxFrames,
                        (unsigned long long)c.enqueuedFrames,
                        (unsigned long long)c.ecnMarked,
                        (unsigned long long)c.TotalDrops(),
                        drops.c_str());
        }
        totalEcn += sw->GetCounters().ecnMarked;
        totalDrops += sw->GetCounters().TotalDrops();
    }
    uint64_t linkDrops = 0;
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        for (Ptr<MetaRoceNetDevice> d : {link.deviceA, link.deviceB})
        {
            linkDrops += d->GetCounters().TotalDrops();
        }
    }
    uint64_t tapCe = 0;
    uint64_t lagCe = 0;
    uint64_t toTapBytes = 0;
    for (const auto& bridge : bridges)
    {
        tapCe += bridge->GetCounters().toTapCe;
        lagCe += bridge->GetCounters().lagCe;
        toTapBytes += bridge->GetCounters().toTapBytes;
    }
    metaroce::hil::SimHostServer::Stats simTotal;
    for (size_t i = 0; i < simServers.size(); ++i)
    {
        const metaroce::hil::SimHostServer::Stats st = simServers[i]->GetStats();
        std::printf("sim host %s: sessions %llu (passed %llu, failed %llu), rejected %llu; "
                    "verified %llu messages %llu bytes; errors %llu%s%s\n",
                    Ipv4Text(simIps[i]).c_str(),
                    (unsigned long long)st.sessions,
                    (unsigned long long)st.passed,
                    (unsigned long long)st.failed,
                    (unsigned long long)st.rejected,
                    (unsigned long long)st.messagesVerified,
                    (unsigned long long)st.bytesVerified,
                    (unsigned long long)st.errors,
                    st.firstError.empty() ? "" : ", first: ",
                    st.firstError.c_str());
        simTotal.sessions += st.sessions;
        simTotal.passed += st.passed;
        simTotal.failed += st.failed;
        simTotal.messagesVerified += st.messagesVerified;
        simTotal.bytesVerified += st.bytesVerified;
        simTotal.errors += st.errors;
    }
    uint64_t failedLinkFrames = 0;
    for (size_t i = 0; i < opts.failLinks.size(); ++i)
    {
        const bool happened = opts.failLinks[i].start <= simSeconds;
        std::printf("failure of leaf %u - spine %u at %.3f s: %s\n",
                    opts.failLinks[i].leaf,
                    opts.failLinks[i].spine,
                    opts.failLinks[i].start,
                    happened ? ("the link had carried " + std::to_string(g_framesBeforeFailure[i]) +
                                " frames")
                                   .c_str()
                             : "not reached");
        failedLinkFrames += g_framesBeforeFailure[i];
    }
    std::printf(
        "RESULT program=metaroce-hil-fabric sim_s=%.3f cpu_s=%.2f slowdown=%g lag_max_us=%.1f "
        "lag_mean_us=%.1f lag_bound_us=%.1f lag_over_bound=%llu queued_max=%llu "
        "fell_behind=%d tap_bytes=%llu tap_ce=%llu lag_ce=%llu ecn_marked=%llu switch_drops=%llu "
        "device_drops=%llu failed_link_frames=%llu sim_sessions=%llu sim_passed=%llu "
        "sim_failed=%llu sim_verified_msgs=%llu sim_verified_bytes=%llu sim_errors=%llu\n",
        simSeconds,
        cpuSeconds,
        opts.slowdown,
        lag.maxLagUs,
        lag.meanLagUs,
        opts.maxLagMs * 1e3,
        (unsigned long long)lag.overBound,
        (unsigned long long)lag.maxQueued,
        g_lag->FellBehind() ? 1 : 0,
        (unsigned long long)toTapBytes,
        (unsigned long long)tapCe,
        (unsigned long long)lagCe,
        (unsigned long long)totalEcn,
        (unsigned long long)totalDrops,
        (unsigned long long)linkDrops,
        (unsigned long long)failedLinkFrames,
        (unsigned long long)simTotal.sessions,
        (unsigned long long)simTotal.passed,
        (unsigned long long)simTotal.failed,
        (unsigned long long)simTotal.messagesVerified,
        (unsigned long long)simTotal.bytesVerified,
        (unsigned long long)simTotal.errors);
    std::fflush(stdout);
    bridges.clear();
    g_realtime = nullptr;
    g_metaroceRealtime = nullptr;
    Simulator::Destroy();
    simServers.clear();
    // A simulated host that found a data error or lost a session fails the run; with
    // --fail-behind, so does a run that fell behind the wall clock.
    if (simTotal.failed != 0 || simTotal.errors != 0)
    {
        return 1;
    }
    return opts.failBehind && g_lag->FellBehind() ? 3 : 0;
}
