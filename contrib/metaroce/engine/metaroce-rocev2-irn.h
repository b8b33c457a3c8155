/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_IRN_H
#define METAROCE_ROCEV2_IRN_H

#include "metaroce-rocev2-recovery.h"
#include "metaroce-rocev2-responder.h"

#include <vector>

namespace metaroce
{

/**
 * IRN selective repeat (recovery "irn"; Mittal et al., "Revisiting Network Support for
 * RDMA", SIGCOMM 2018), requester half. Data packets use the IRN_* opcodes (an IRH with the
 * payload offset and receive WQE number, the RETH on every WRITE packet). The SACKed PSNs are
 * kept in a bitmap; every unSACKed PSN below the highest SACKed one is lost and resent once,
 * before any new PSN; the RTO_low/RTO_high timer resends every unSACKed PSN. New PSNs are
 * capped at the BDP cap, min(maxInflightPackets, irnWindow). The bitmap is sized once.
 */
class IrnRecovery : public RoceRecovery
{
  public:
    /// Create with the settings of \p cfg.
    explicit IrnRecovery(const ConnectionConfig& cfg);

    const char* Name() const override
    {
        return "irn";
    }

    void OnPost(RoceRequester& req) override;
    bool MayTransmit(const RoceRequester& req) const override;
    void SelectPsn(RoceRequester& req) override;
    void Describe(ParsedPacket& pkt, uint32_t offset, uint32_t recvWqeSn) const override;
    void OnSent(RoceRequester& req, bool retransmission) override;
    Time Rto(const RoceRequester& req) const override;
    void OnCursorOvertaken(RoceRequester& req) override;
    void OnProgress(RoceRequester& req, uint32_t from) override;
    void Restart(RoceRequester& req, uint32_t psn) override;
    void Timeout(RoceRequester& req, uint32_t psn) override;
    void OnSelectiveNack(Time now, RoceRequester& req, const ParsedPacket& pkt) override;
    uint32_t MaxRequestPsns() const override;
    size_t HeapBytes() const override;

  private:
    bool Sacked(uint32_t psn) const;
    bool HolePending() const;
    void SkipSacked(const RoceRequester& req);
    /// Resend the unSACKed PSNs from \p psn up to \p bound (the oldest PSN if all are SACKed).
    void ResendFrom(RoceRequester& req, uint32_t psn, uint32_t bound);
    void UpdateState(RoceRequester& req) const;
    uint32_t Cap() const;

    const ConnectionConfig::RoceV2Options& m_opt; //!< the connection's RoCEv2 settings
    uint32_t m_mask;                              //!< irnWindow - 1 (bitmap index of a PSN)
    std::vector<uint64_t> m_sacked;               //!< SACKed PSNs in [unacked, unacked + window)
    uint32_t m_retxPsn{0};                        //!< next PSN to consider for retransmission
    uint32_t m_lossBound{0};                      //!< unSACKed PSNs below this are lost
    /// After a timeout: PSNs up to this one were sent before it and are presumed lost only
    /// as the cumulative ACK shows them missing (Timeout()).
    uint32_t m_presumedEnd{0};
    uint32_t m_presumedStep{0}; //!< PSNs the next such ACK presumes lost (0: not after a timeout)
};

/**
 * IRN responder half: packets up to irnWindow PSNs ahead of the expected PSN are placed at
 * once (each describes its own place), tracked in a bitmap and delivered in PSN order, which
 * completes messages in order; each out-of-order packet is answered by an IRN NACK
 * (cumulative PSN + the PSN that arrived), queued in a ring sized once.
 */
class IrnReceiver : public RoceRecoveryReceiver
{
  public:
    /// Create with the settings of \p cfg.
    explicit IrnReceiver(const ConnectionConfig& cfg);

    const char* Name() const override
    {
        return "irn";
    }

    void HandleData(Time now, RoceResponder& resp, const ParsedPacket& pkt) override;
    void OnRequestExecuted(Time now, RoceResponder& resp) override;

    bool NackPending() const override
    {
        return m_nackCount > 0;
    }

    bool PollNack(RoceResponder& resp, TxDatagram& out, bool& sent) override;
    void Clear() override;
    size_t HeapBytes() const override;

  private:
    /// What the in-order pass needs of a packet placed ahead of ePSN.
    struct Slot
    {
        uint8_t opcode{0};     //!< BTH opcode
        bool ackReq{false};    //!< BTH AckReq
        uint32_t recvWqeSn{0}; //!< IRH RecvWqeSn
        uint32_t endOffset{0}; //!< offset + length of its payload in the message
        uint32_t dmaLength{0}; //!< WRITE: RETH DMA length
        uint32_t immDt{0};     //!< immediate data
    };

    RoceExec Place(RoceResponder& resp, const ParsedPacket& pkt);
    void DeliverRun(Time now, RoceResponder& resp);
    RoceExec Deliver(RoceResponder& resp, const Slot& slot);
    void QueueNack(uint32_t sackPsn);

    uint32_t m_mask;                   //!< irnWindow - 1 (bitmap index of a PSN)
    std::vector<uint64_t> m_placed;    //!< PSNs placed in (ePSN, ePSN + window)
    std::vector<Slot> m_slots;         //!< per-PSN info of placed packets
    std::vector<uint32_t> m_nackQueue; //!< ring of SACK PSNs of NACKs to send
    uint32_t m_nackHead{0};            //!< first entry of m_nackQueue
    uint32_t m_nackCount{0};           //!< entries in m_nackQueue
    uint32_t m_rqBaseSn{0};            //!< RecvWqeSn of the oldest posted receive
    uint32_t m_msgSn{0};               //!< RecvWqeSn of the SEND being delivered
};

} // namespace metaroce

#endif // METAROCE_ROCEV2_IRN_H
