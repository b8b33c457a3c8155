/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_GO_BACK_N_H
#define METAROCE_ROCEV2_GO_BACK_N_H

#include "metaroce-rocev2-recovery.h"
#include "metaroce-rocev2-responder.h"

namespace metaroce
{

/**
 * Go-back-N, as InfiniBand RC (recovery "gbn"), requester half: a PSN sequence error NAK or
 * the local ACK timeout moves the send cursor back to the first missing PSN and everything
 * from there is sent again; new PSNs respect maxInflightPackets.
 */
class GoBackNRecovery : public RoceRecovery
{
  public:
    /// Create with the settings of \p cfg.
    explicit GoBackNRecovery(const ConnectionConfig& cfg);

    const char* Name() const override
    {
        return "gbn";
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
    void OnSelectiveNack(Time now, RoceRequester& req, const ParsedPacket& pkt) override;
    uint32_t MaxRequestPsns() const override;
    size_t HeapBytes() const override;

  private:
    /// Set the requester state from where the send cursor is.
    static void StateFromCursor(RoceRequester& req);

    uint32_t m_maxInflight; //!< cap on unacknowledged packets (0: none)
    Time m_rto;             //!< the local ACK timeout
};

/**
 * Go-back-N responder half: only the expected PSN is executed, in place (the running WRITE
 * address, or the oldest posted receive); an out-of-sequence packet is dropped and answered
 * by one PSN sequence error NAK per error episode; duplicates are acknowledged again.
 */
class GoBackNReceiver : public RoceRecoveryReceiver
{
  public:
    const char* Name() const override
    {
        return "gbn";
    }

    void HandleData(Time now, RoceResponder& resp, const ParsedPacket& pkt) override;
    void OnRequestExecuted(Time now, RoceResponder& resp) override;

    bool NackPending() const override
    {
        return false;
    }

    bool PollNack(RoceResponder& resp, TxDatagram& out, bool& sent) override;
    void Clear() override;
    size_t HeapBytes() const override;

  private:
    /// Execute the in-sequence packet \p pkt.
    RoceExec Execute(RoceResponder& resp, const ParsedPacket& pkt);

    bool m_nakEpisode{false};    //!< a NAK was sent; drop out-of-sequence packets silently
    uint64_t m_respVa{0};        //!< WRITE: address of the next byte
    uint32_t m_respRkey{0};      //!< WRITE: R_Key of the message
    uint32_t m_respRemaining{0}; //!< WRITE: bytes still expected
    uint32_t m_respLength{0};    //!< WRITE: DMA length of the message
    uint32_t m_respOffset{0};    //!< SEND: bytes placed so far
};

} // namespace metaroce

#endif // METAROCE_ROCEV2_GO_BACK_N_H
