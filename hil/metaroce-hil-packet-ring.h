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
#include <linux/if_packet.h>
#include <memory>
#include <string>

/**
 * \file
 * PACKET_MMAP rings of an AF_PACKET socket: a receive ring (the kernel writes frames into
 * memory shared with the process, so reading costs no system call and no copy) and a transmit
 * ring (the process writes frames into shared slots and one send() asks the kernel to take
 * every slot marked ready).
 *
 * Two receive layouts. TPACKET_V2 hands over frame by frame, in fixed slots. TPACKET_V3 packs
 * frames into blocks and hands over a whole block when it is full or when it has waited
 * \c retireTimeoutMs (the kernel's block-retire timer, in jiffies: 4 ms at HZ=250), so a lone
 * frame can wait that long: fewer wake-ups under load, a round trip of milliseconds when
 * frames are few (docs/hil.md, "Raw port I/O").
 */

namespace metaroce
{
namespace hil
{

/// Sizes of a PacketRing.
struct PacketRingConfig
{
    bool blocks{false};           //!< TPACKET_V3 receive blocks (else TPACKET_V2 slots)
    uint32_t maxFrameBytes{9216}; //!< largest frame to receive or send (with the Ethernet header)
    uint32_t rxBlockBytes{0};     //!< bytes per receive block (0: fit 4 largest frames)
    uint32_t rxBytes{8 << 20};    //!< receive ring size (rounded up to whole blocks)
    uint32_t retireTimeoutMs{1};  //!< hand over a partly filled block after this long
    uint32_t txFrames{256};       //!< transmit slots
    /**
     * Have the kernel copy each frame into the packet's own buffer when it sends it (a
     * virtio-net header before the frame, PACKET_VNET_HDR, whose hdr_len covers the whole
     * frame) instead of sending it from the ring's pages. A device that hands the packet on
     * inside the kernel (a veth) copies ring-backed pages anyway, into pages it allocates for
     * each frame (skb_copy_ubufs); one copy into the packet's buffer is cheaper. Also makes
     * received frames carry that header, which the ring skips (RingFrame::data is still the
     * Ethernet header).
     */
    bool txCopy{false};
};

/// What the receive ring reports about one frame.
struct RingFrame
{
    const uint8_t* data{nullptr}; //!< the frame, from its Ethernet header
    uint32_t length{0};           //!< bytes captured
    uint32_t wireLength{0};       //!< bytes on the wire (> length: truncated)
    uint8_t packetType{0};        //!< sll_pkttype (PACKET_HOST, PACKET_OUTGOING, ...)
};

/**
 * Frames in memory shared with the kernel, as the raw port uses them: PACKET_MMAP rings
 * (PacketRing) or an AF_XDP socket (XdpSocket). All calls on the port's one thread.
 */
class FrameRing
{
  public:
    /// Called for every frame received; the bytes are valid during the call only.
    using FrameVisitor = std::function<void(const RingFrame&)>;

    virtual ~FrameRing() = default;

    /**
     * Visit up to about \p maxFrames received frames and give their memory back.
     * \return frames visited
     */
    virtual size_t Receive(size_t maxFrames, const FrameVisitor& visit) = 0;

    /// \return the largest frame a transmit slot holds.
    virtual uint32_t TxSlotBytes() const = 0;

    /**
     * \return the data area of the next free transmit slot (TxSlotBytes() long), or nullptr
     * while the kernel still owns every slot (Flush(), then wait for writability)
     */
    virtual uint8_t* TxSlot() = 0;

    /// Mark the slot TxSlot() returned as ready to send, with a frame of \p length bytes.
    virtual void TxCommit(uint32_t length) = 0;

    /// \return slots marked ready since the last successful Flush().
    virtual uint32_t TxPending() const = 0;

    /**
     * Ask the kernel to send every ready slot, without waiting.
     * \param fd the descriptor the port polls
     * \return 0 (the ready count is then 0), or the errno of the refusal (EAGAIN / ENOBUFS:
     *         the slots stay ready for the next Flush())
     */
    virtual int Flush(int fd) = 0;

    /// \return frames the kernel dropped for want of room since the last call (\p fd polled).
    virtual uint64_t ReadDrops(int fd) = 0;

    /// \return a one-line description of the sizes.
    virtual std::string Describe() const = 0;
};

/// \return the frames the kernel dropped on packet socket \p fd since the last call.
uint64_t PacketSocketDrops(int fd);

/// The mapped rings of one AF_PACKET socket.
class PacketRing : public FrameRing
{
  public:
    /**
     * Switch \p fd to TPACKET_V3 (cfg.blocks) or TPACKET_V2 and map a receive and a transmit
     * ring. Must come before bind(), so that no frame is queued outside the ring.
     * \param[out] error why it failed (the setsockopt or mmap, with errno's text)
     * \return the rings, or nullptr
     */
    static std::unique_ptr<PacketRing> Map(int fd, const PacketRingConfig& cfg, std::string& error);

    ~PacketRing() override;
    PacketRing(const PacketRing&) = delete;
    PacketRing& operator=(const PacketRing&) = delete;

    /// V2: up to \p maxFrames frames; V3: the frames of up to \p maxFrames / 8 blocks (at
    /// least one).
    size_t Receive(size_t maxFrames, const FrameVisitor& visit) override;

    uint32_t TxSlotBytes() const override
    {
        return m_tx.slotBytes - m_txDataOffset - m_txVnetBytes;
    }

    uint8_t* TxSlot() override;
    void TxCommit(uint32_t length) override;

    uint32_t TxPending() const override
    {
        return m_txPending;
    }

    /// One send(fd, NULL, 0, MSG_DONTWAIT): the kernel takes every ready slot.
    int Flush(int fd) override;
    /// PACKET_STATISTICS.
    uint64_t ReadDrops(int fd) override;
    std::string Describe() const override;

  private:
    PacketRing() = default;

    /// Slots of fixed size in blocks (V2 receive ring, either transmit ring).
    struct SlotRing
    {
        uint8_t* base{nullptr}; //!< first slot
        uint32_t slotBytes{0};  //!< slot size
        uint32_t perBlock{0};   //!< slots per block
        uint32_t blockBytes{0}; //!< block size
        uint32_t slots{0};      //!< slots
        uint32_t next{0};       //!< next slot to use

        /// \return the next slot.
        uint8_t* Next() const
        {
            return base + size_t(next / perBlock) * blockBytes +
                   size_t(next % perBlock) * slotBytes;
        }

        /// Move to the following slot.
        void Advance()
        {
            next = next + 1 == slots ? 0 : next + 1;
        }
    };

    /**
     * Lay out \p ring: slots of \p slotBytes, about \p count of them, a few per block.
     * \return the request for the kernel
     */
    static tpacket_req3 LayOut(SlotRing& ring, uint32_t slotBytes, uint32_t count);
    /// V2: visit up to \p maxFrames ready slots.
    size_t ReceiveSlots(size_t maxFrames, const FrameVisitor& visit);
    /// V3: visit the frames of up to \p maxBlocks ready blocks.
    size_t ReceiveBlocks(size_t maxBlocks, const FrameVisitor& visit);
    /// \return the status word of the transmit slot at \p slot.
    uint32_t* TxStatus(uint8_t* slot) const;

    bool m_v3{false};           //!< TPACKET_V3 (else V2)
    uint8_t* m_map{nullptr};    //!< both rings, receive first
    size_t m_mapBytes{0};       //!< mapped bytes
    uint32_t m_blockBytes{0};   //!< V3 receive block size
    uint32_t m_blocks{0};       //!< V3 receive blocks
    uint32_t m_nextBlock{0};    //!< V3: next receive block to look at
    uint32_t m_retireMs{0};     //!< V3 block-retire timeout
    SlotRing m_rxSlots;         //!< V2 receive slots
    SlotRing m_tx;              //!< transmit slots
    uint32_t m_txDataOffset{0}; //!< where a transmit slot's frame starts
    uint32_t m_txPending{0};    //!< slots marked ready, not yet flushed
    uint32_t m_txVnetBytes{0};  //!< virtio-net header before each transmit frame (txCopy)
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_PACKET_RING_H
