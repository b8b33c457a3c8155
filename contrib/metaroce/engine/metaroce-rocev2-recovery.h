/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_RECOVERY_H
#define METAROCE_ROCEV2_RECOVERY_H

#include "metaroce-config.h"
#include "metaroce-wire.h"

#include <memory>
#include <string>

/**
 * \file
 * Loss recovery of a RoCEv2 queue pair, chosen by name (rocev2.recovery, PolicyKind::
 * ROCE_RECOVERY). A recovery has two halves, one per role, built from the same name: the
 * requester's (RoceRecovery: which PSN goes out next, what a NAK, a SACK or a timeout
 * resends, the retransmission timeout) and the responder's (RoceRecoveryReceiver: which data
 * packets are accepted, placed and acknowledged). "gbn" is IB RC's go-back-N
 * (metaroce-rocev2-go-back-n.h), "irn" IRN's selective repeat (metaroce-rocev2-irn.h).
 */

namespace metaroce
{

class RoceRequester;
class RoceResponder;
struct TxDatagram;

/**
 * The requester's half of a recovery: it owns the retransmission bookkeeping and moves the
 * requester's send cursor and state through the requester's policy interface. The requester
 * keeps the PSN space, the send queue, the timers and the retry budgets.
 */
class RoceRecovery
{
  public:
    virtual ~RoceRecovery() = default;
    /// \return the name the recovery is chosen by.
    virtual const char* Name() const = 0;
    /// A send work request was posted (the requester's NextPostPsn moved past it).
    virtual void OnPost(RoceRequester& req) = 0;
    /// \return true if a data packet may leave; the requester's state and pacer allow one.
    virtual bool MayTransmit(const RoceRequester& req) const = 0;
    /// Point the send cursor at the PSN the next data packet carries.
    virtual void SelectPsn(RoceRequester& req) = 0;
    /**
     * Add what the recovery needs on the wire to data packet \p pkt (its opcode is set):
     * \p offset is its payload's offset in the message, \p recvWqeSn the receive it consumes.
     */
    virtual void Describe(ParsedPacket& pkt, uint32_t offset, uint32_t recvWqeSn) const = 0;
    /// A data packet left and the send cursor moved past it; \p retransmission: sent before.
    virtual void OnSent(RoceRequester& req, bool retransmission) = 0;
    /// \return the retransmission timeout to arm now.
    virtual Time Rto(const RoceRequester& req) const = 0;
    /// A cumulative acknowledgement overtook the send cursor, which moved up to it.
    virtual void OnCursorOvertaken(RoceRequester& req) = 0;
    /// PSNs from \p from up to the requester's UnackedPsn were acknowledged cumulatively.
    virtual void OnProgress(RoceRequester& req, uint32_t from) = 0;
    /// Resend from \p psn: a sequence NAK, a gap in READ responses, the end of an RNR wait, or
    /// a retransmission timeout unless Timeout() says otherwise.
    virtual void Restart(RoceRequester& req, uint32_t psn) = 0;

    /// The retransmission timer expired with \p psn the oldest unacknowledged PSN (by default
    /// a Restart() from it).
    virtual void Timeout(RoceRequester& req, uint32_t psn)
    {
        Restart(req, psn);
    }

    /// A selective NACK (IRN_NACK) arrived.
    virtual void OnSelectiveNack(Time now, RoceRequester& req, const ParsedPacket& pkt) = 0;
    /// \return the most PSNs one RDMA READ may span (its response packets).
    virtual uint32_t MaxRequestPsns() const = 0;
    /// \return heap bytes held (the object itself included).
    virtual size_t HeapBytes() const = 0;
};

/**
 * The responder's half of a recovery: it judges every inbound data packet against the
 * expected PSN, places and delivers the accepted ones through the responder's policy
 * interface and owns the state of doing so (message cursors, reorder bitmap, NACK queue).
 */
class RoceRecoveryReceiver
{
  public:
    virtual ~RoceRecoveryReceiver() = default;
    /// \return the name the recovery is chosen by.
    virtual const char* Name() const = 0;
    /// Process data packet \p pkt (its ECN mark is already accounted for).
    virtual void HandleData(Time now, RoceResponder& resp, const ParsedPacket& pkt) = 0;
    /**
     * The RDMA READ or atomic request at the expected PSN was executed and the expected PSN
     * moved past the PSNs of its responses: end a sequence error episode, deliver what was
     * placed ahead.
     */
    virtual void OnRequestExecuted(Time now, RoceResponder& resp) = 0;
    /// \return true if a selective NACK is queued.
    virtual bool NackPending() const = 0;
    /**
     * Take the queued selective NACKs in order: send the first one still ahead of the
     * expected PSN into \p out (\p sent: whether it was written); the ones behind it only
     * make an ACK due. \return false if no NACK was sent, so that the caller goes on.
     */
    virtual bool PollNack(RoceResponder& resp, TxDatagram& out, bool& sent) = 0;
    /// Forget every queued NACK (the error state).
    virtual void Clear() = 0;
    /// \return heap bytes held (the object itself included).
    virtual size_t HeapBytes() const = 0;
};

/// \return the requester's half of the recovery called \p name ("gbn", "irn"), or nullptr.
std::unique_ptr<RoceRecovery> CreateRoceRecovery(const std::string& name,
                                                 const ConnectionConfig& cfg);

/// \return the responder's half of the recovery called \p name ("gbn", "irn"), or nullptr.
std::unique_ptr<RoceRecoveryReceiver> CreateRoceRecoveryReceiver(const std::string& name,
                                                                 const ConnectionConfig& cfg);

} // namespace metaroce

#endif // METAROCE_ROCEV2_RECOVERY_H
