/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_FLOW_APPLICATION_H
#define METAROCE_FLOW_APPLICATION_H

#include "metaroce-traffic-application.h"

#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <cstdint>

/**
 * \file
 * One flow as an ns-3 Application: MetaRoceFlow (its record) and MetaRoceFlowApplication.
 */

namespace ns3
{

/**
 * One flow: \p bytes from host \p src to host \p dst, posted at \p start as RDMA WRITEs (the
 * last one WRITE_WITH_IMM, so the receiver sees a completion) into a virtual region.
 *
 * FCT = finish - start, where finish is the sender's completion of the last message (the
 * sender knows every byte arrived). The ideal FCT is
 *   idealFct = bytes * 8 / R + baseRtt,
 * with R the smaller of the two NICs' line rates (all planes) and baseRtt the unloaded round
 * trip of one full data packet and its ACK on the shortest path of h links:
 *   baseRtt = 2 h d + h (Tdata + Tack),
 * d the link delay, Tdata the serialization of an MTU-sized datagram plus
 * WIRE_OVERHEAD_BYTES at the host port rate, Tack that of a 64-byte ACK. Slowdown =
 * FCT / idealFct (about 1.02 for an unloaded 4 KiB-MTU flow: the headers).
 */
struct MetaRoceFlow
{
    uint32_t id{0};       //!< flow id (htsim id, or creation order)
    uint32_t src{0};      //!< sender host index
    uint32_t dst{0};      //!< receiver host index
    uint64_t bytes{0};    //!< payload bytes
    Time start;           //!< post time
    Time finish;          //!< sender completion of the last message (valid if done)
    Time receiverFinish;  //!< receiver's completion (valid if received)
    Time idealFct;        //!< ideal FCT (see above)
    bool done{false};     //!< the sender's completion arrived with SUCCESS
    bool received{false}; //!< the receiver's completion arrived with SUCCESS
    bool failed{false};   //!< a completion reported an error
    uint32_t srcQpn{0};   //!< connection on the sender
    uint32_t dstQpn{0};   //!< connection on the receiver

    /// \return finish - start (valid if done).
    Time Fct() const
    {
        return finish - start;
    }

    /// \return Fct() / idealFct.
    double Slowdown() const
    {
        return Fct().GetSeconds() / idealFct.GetSeconds();
    }
};

/**
 * \ingroup metaroce
 * One flow from the MetaRoCE NIC of the node it is installed on to a remote NIC, with its own
 * connection configuration (so flows of one simulation may use different transports).
 *
 * When it starts, it connects a new connection pair with that configuration (the simulated
 * control plane is instantaneous), posts one receive at the remote end and the flow's bytes as
 * RDMA WRITEs of at most MaxMessageSize bytes, and records the outcome (GetFlow()). With
 * Operation READ it instead reads the flow's bytes from the remote NIC's memory with RDMA
 * READs of at most MaxMessageSize bytes (the data travels from the remote host to this one;
 * the record's src is still this host, the reader); the flow is done, and received, when the
 * last READ completes. Stopping it
 * before it starts keeps it from starting (it then counts as finished, with neither done nor
 * failed set); work already posted is not withdrawn (an RDMA NIC completes what it was given).
 * Distributed runs: every rank creates both connections (QPNs stay identical across ranks), and
 * only the rank that owns a host posts work on it.
 */
class MetaRoceFlowApplication : public MetaRoceTrafficApplication
{
  public:
    /// What the flow's messages are (Operation attribute).
    enum Operation
    {
        WRITE, //!< RDMA WRITEs from this node to the remote one (the last with immediate)
        READ,  //!< RDMA READs by this node of the remote one's bytes (data travels back)
    };

    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceFlowApplication();
    ~MetaRoceFlowApplication() override;

    /**
     * Set the connection configuration of this flow (default: the sending NIC's default
     * connection configuration when the flow starts). MetaRoceFlowHelper sets it at Install.
     * \param cfg the configuration
     */
    void SetConnectionConfig(const metaroce::ConnectionConfig& cfg);

    /// \return the connection configuration (the sending NIC's default if none was set).
    metaroce::ConnectionConfig GetConnectionConfig() const;

    /**
     * Set the receiver.
     * \param remote the receiving NIC
     * \param remoteHost its host index (for the record)
     */
    void SetRemote(Ptr<MetaRoceNic> remote, uint32_t remoteHost);

    /**
     * Set the sender's host index (for the record).
     * \param localHost the sender's host index
     */
    void SetLocalHost(uint32_t localHost);

    /**
     * Set the ideal FCT of the record (see MetaRoceFlow; MetaRoceFlowHelper computes it).
     * \param idealFct the ideal FCT
     */
    void SetIdealFct(Time idealFct);

    /// \return the flow's record: its start time (the time it started, or the application's
    /// start time until then), and its outcome once known.
    MetaRoceFlow GetFlow() const;

    /// TracedCallback signature of a finished flow.
    typedef void (*FlowTracedCallback)(const MetaRoceFlow& flow);

    /// Distributed runs: a flow finished once any rank saw it finish.
    bool CheckFinishedOnAllRanks(bool& finished) const override;

  protected:
    void DoDispose() override;

  private:
    void StartApplication() override;
    void StopApplication() override;

    /**
     * A completion of one of the flow's two connections.
     * \param sender whether at the sending end
     * \param completion the completion
     */
    void OnCompletion(bool sender, const metaroce::Completion& completion);
    /// Record a failure and finish.
    void Fail();
    /// \return the MetaRoCE NIC of the node this application is installed on.
    Ptr<MetaRoceNic> LocalNic() const;

    uint64_t m_bytes{1};                                 //!< Bytes attribute
    Operation m_operation{WRITE};                        //!< Operation attribute
    uint32_t m_id{0};                                    //!< FlowId attribute
    Ptr<MetaRoceNic> m_remote;                           //!< the receiving NIC
    metaroce::ConnectionConfig m_cfg;                    //!< connection configuration
    bool m_haveConfig{false};                            //!< m_cfg was set
    bool m_stopped{false};                               //!< StopApplication ran
    bool m_started{false};                               //!< StartApplication ran
    MetaRoceFlow m_flow;                                 //!< the record
    TracedCallback<const MetaRoceFlow&> m_finishedTrace; //!< the flow finished
};

} // namespace ns3

#endif // METAROCE_FLOW_APPLICATION_H
