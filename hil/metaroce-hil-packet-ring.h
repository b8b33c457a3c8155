/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_PACKET_RING_H
#define METAROCE_HIL_PACKET_RING_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

/**
 * \file
 * PACKET_MMAP rings of an AF_PACKET socket: a TPACKET_V3 receive ring (the kernel writes
 * frames into blocks of memory shared with the process and hands over a whole block at once,
 * so reading costs no system call and no copy) and a transmit ring (the process writes frames
 * into shared slots and one send() asks the kernel to take every slot marked ready).
 *
 * A receive block goes to the process when it is full or when it has waited
 * \c retireTimeoutMs (the kernel's block-retire timer), so a lone frame can wait that long:
 * the price of handing over frames in blocks (docs/hil.md, "Raw port I/O").
 */

namespace metaroce
{
namespace hil
{

/// Sizes of a PacketRing.
struct PacketRingConfig
{
    uint32_t maxFrameBytes{9216}; //!< largest frame to receive or send (with the Ethernet header)
    uint32_t rxBlockBytes{0};     //!< bytes per receive block (0: fit 4 largest frames)
    uint32_t rxBytes{8 << 20};    //!< receive ring size (rounded up to whole blocks)
    uint32_t retireTimeoutMs{1};  //!< hand over a partly filled block after this long
    uint32_t txFrames{256};       //!< transmit slots
};

/// What the receive ring reports about one frame.
struct RingFrame
{
    const uint8_t* data{nullptr}; //!< the frame, from its Ethernet header
    uint32_t length{0};           //!< bytes captured
    uint32_t wireLength{0};       //!< bytes on the wire (> length: truncated)
    uint8_t packetType{0};        //!< sll_pkttype (PACKET_HOST, PACKET_OUTGOING, ...)
};

/// The mapped rings of one AF_PACKET socket.
class PacketRing
{
  public:
    /// Called for every frame of a block; the bytes are valid during the call only.
    using FrameVisitor = std::function<void(const RingFrame&)>;

    /**
     * Switch \p fd to TPACKET_V3 and map a receive and a transmit ring. Must come before
     * bind(), so that no frame is queued outside the ring.
     * \param[out] error why it failed (the setsockopt or mmap, with errno's text)
     * \return the rings, or nullptr
     */
    static std::unique_ptr<PacketRing> Map(int fd, const PacketRingConfig& cfg, std::string& error);

    ~PacketRing();
    PacketRing(const PacketRing&) = delete;
    PacketRing& operator=(const PacketRing&) = delete;

    /**
     * Visit the frames of up to \p maxBlocks blocks that the kernel has handed over, and give
     * the blocks back. \return frames visited
     */
    size_t Receive(size_t maxBlocks, const FrameVisitor& visit);

    /// \return the largest frame a transmit slot holds.
    uint32_t TxSlotBytes() const
    {
        return m_txSlotData;
    }

    /**
     * \return the data area of the next free transmit slot (TxSlotBytes() long), or nullptr
     * while the kernel still owns it (the ring is full: Flush(), then wait for writability)
     */
    uint8_t* TxSlot();

    /// Mark the slot TxSlot() returned as ready to send, with a frame of \p length bytes.
    void TxCommit(uint32_t length);

    /// \return slots marked ready since the last successful Flush().
    uint32_t TxPending() const
    {
        return m_txPending;
    }

    /**
     * Ask the kernel to send every ready slot: one send(), which does not wait.
     * \return 0 (the ready count is then 0), or the errno of the refusal (EAGAIN / ENOBUFS:
     *         the slots stay ready for the next Flush())
     */
    int Flush(int fd);

    /// \return a one-line description of the sizes.
    std::string Describe() const;

  private:
    PacketRing() = default;

    uint8_t* m_map{nullptr};        //!< both rings, receive first
    size_t m_mapBytes{0};           //!< mapped bytes
    uint32_t m_blockBytes{0};       //!< receive block size
    uint32_t m_blocks{0};           //!< receive blocks
    uint32_t m_nextBlock{0};        //!< next receive block to look at
    uint8_t* m_tx{nullptr};         //!< first transmit slot
    uint32_t m_txFrameBytes{0};     //!< transmit slot size (header included)
    uint32_t m_txSlotData{0};       //!< frame bytes per transmit slot
    uint32_t m_txDataOffset{0};     //!< where a slot's frame starts
    uint32_t m_txFrames{0};         //!< transmit slots
    uint32_t m_txFramesPerBlock{0}; //!< transmit slots per transmit block
    uint32_t m_txBlockBytes{0};     //!< transmit block size
    uint32_t m_nextTx{0};           //!< next transmit slot to fill
    uint32_t m_txPending{0};        //!< slots marked ready, not yet flushed
    uint32_t m_retireMs{0};         //!< block-retire timeout
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_PACKET_RING_H
