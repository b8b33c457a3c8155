/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-packet-ring.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <linux/if_packet.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

namespace metaroce
{
namespace hil
{
namespace
{

/// Receive-ring frame size: only checked by the kernel against the block size in V3.
constexpr uint32_t RX_FRAME_UNIT = 2048;
/// Fixed-size slots per block (slots never span blocks).
constexpr uint32_t SLOTS_PER_BLOCK = 8;
/// Room the kernel may leave between a received frame's header and its Ethernet header.
constexpr uint32_t RX_MAC_ROOM = 64;
/// The virtio-net header of PACKET_VNET_HDR (struct virtio_net_hdr, which C++ cannot include:
/// a member of its header is named `class`): flags, gso_type, then little-endian 16-bit
/// hdr_len, gso_size, csum_start, csum_offset.
constexpr uint32_t VNET_HDR_BYTES = 10;
/// Offset of hdr_len: bytes of the frame the kernel copies into the packet's own buffer.
constexpr uint32_t VNET_HDR_LEN_OFFSET = 2;

/// \return \p value rounded up to a multiple of \p unit.
uint32_t
RoundUp(uint32_t value, uint32_t unit)
{
    return (value + unit - 1) / unit * unit;
}

/// \return the smallest power of two >= \p value.
uint32_t
PowerOfTwoAtLeast(uint32_t value)
{
    uint32_t p = 1;
    while (p < value)
    {
        p <<= 1;
    }
    return p;
}

/// \return the frame behind the ring header \p h (tpacket2_hdr or tpacket3_hdr).
template <typename Header>
RingFrame
FrameAt(const Header* h)
{
    const auto* at = reinterpret_cast<const uint8_t*>(h);
    RingFrame f;
    f.data = at + h->tp_mac;
    f.length = h->tp_snaplen;
    f.wireLength = h->tp_len;
    f.packetType =
        reinterpret_cast<const sockaddr_ll*>(at + TPACKET_ALIGN(sizeof(Header)))->sll_pkttype;
    return f;
}

/// \return "what: errno text".
std::string
Failure(const char* what)
{
    return std::string(what) + ": " + std::strerror(errno);
}

} // namespace

tpacket_req3
PacketRing::LayOut(SlotRing& ring, uint32_t slotBytes, uint32_t count)
{
    const uint32_t page = uint32_t(sysconf(_SC_PAGESIZE));
    ring.slotBytes = slotBytes;
    ring.blockBytes = RoundUp(slotBytes * SLOTS_PER_BLOCK, page);
    ring.perBlock = ring.blockBytes / slotBytes;
    const uint32_t blocks = (count + ring.perBlock - 1) / ring.perBlock;
    ring.slots = blocks * ring.perBlock;
    tpacket_req3 req{};
    req.tp_block_size = ring.blockBytes;
    req.tp_block_nr = blocks;
    req.tp_frame_size = slotBytes;
    req.tp_frame_nr = ring.slots;
    return req;
}

std::unique_ptr<PacketRing>
PacketRing::Map(int fd, const PacketRingConfig& cfg, std::string& error)
{
    const uint32_t page = uint32_t(sysconf(_SC_PAGESIZE));
    if (cfg.maxFrameBytes == 0 || cfg.maxFrameBytes > (1u << 20) || cfg.rxBytes == 0 ||
        cfg.txFrames == 0 || cfg.retireTimeoutMs == 0)
    {
        error = "packet ring: bad sizes (frame, blocks, slots and retire timeout must be > 0)";
        return nullptr;
    }
    int version = cfg.blocks ? TPACKET_V3 : TPACKET_V2;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) != 0)
    {
        error = Failure(cfg.blocks ? "PACKET_VERSION TPACKET_V3" : "PACKET_VERSION TPACKET_V2");
        return nullptr;
    }
    // A frame the kernel cannot build from a slot is skipped instead of stopping the ring
    // (ours are built and checked against the MTU before they are queued).
    int loss = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_LOSS, &loss, sizeof(loss)) != 0)
    {
        error = Failure("PACKET_LOSS");
        return nullptr;
    }

    std::unique_ptr<PacketRing> ring(new PacketRing());
    ring->m_v3 = cfg.blocks;
    if (cfg.txCopy)
    {
        int one = 1;
        if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) != 0)
        {
            error = Failure("PACKET_VNET_HDR");
            return nullptr;
        }
        ring->m_txVnetBytes = VNET_HDR_BYTES;
    }
    // Received frames start after the header, the address and some alignment room.
    const uint32_t rxHeader = (cfg.blocks ? TPACKET3_HDRLEN : TPACKET2_HDRLEN) + RX_MAC_ROOM;
    tpacket_req3 rx{};
    if (cfg.blocks)
    {
        // Blocks of at least two of the largest frames, a power of two of pages.
        uint32_t block = cfg.rxBlockBytes;
        if (block == 0)
        {
            block = PowerOfTwoAtLeast(2 * (cfg.maxFrameBytes + rxHeader));
        }
        block = RoundUp(std::max(block, page), page);
        if (block < cfg.maxFrameBytes + rxHeader)
        {
            error = "packet ring: a receive block of " + std::to_string(block) +
                    " bytes cannot hold a frame of " + std::to_string(cfg.maxFrameBytes);
            return nullptr;
        }
        const uint32_t blocks = std::max<uint32_t>(8, (cfg.rxBytes + block - 1) / block);
        rx.tp_block_size = block;
        rx.tp_block_nr = blocks;
        rx.tp_frame_size = RX_FRAME_UNIT;
        rx.tp_frame_nr = block / RX_FRAME_UNIT * blocks;
        rx.tp_retire_blk_tov = cfg.retireTimeoutMs;
        ring->m_blockBytes = block;
        ring->m_blocks = blocks;
        ring->m_retireMs = cfg.retireTimeoutMs;
    }
    else
    {
        // As many slots as 4 KiB frames fit in rxBytes, the count V3 blocks hold of them: a
        // slot fits the largest frame, so the ring takes more memory than rxBytes.
        const uint32_t slot = TPACKET_ALIGN(rxHeader + cfg.maxFrameBytes);
        rx = LayOut(ring->m_rxSlots, slot, std::max<uint32_t>(64, cfg.rxBytes / 4096));
    }
    const size_t rxBytes = size_t(rx.tp_block_size) * rx.tp_block_nr;
    // V2 takes the first fields of the V3 request, which are the same.
    if (setsockopt(fd,
                   SOL_PACKET,
                   PACKET_RX_RING,
                   &rx,
                   cfg.blocks ? sizeof(tpacket_req3) : sizeof(tpacket_req)) != 0)
    {
        error = Failure("PACKET_RX_RING") + " (" + std::to_string(rx.tp_block_nr) + " blocks of " +
                std::to_string(rx.tp_block_size) + " bytes)";
        return nullptr;
    }

    // Transmit: fixed slots in both versions (V3 transmits slot by slot, as V2 does).
    ring->m_txDataOffset =
        cfg.blocks ? TPACKET_ALIGN(sizeof(tpacket3_hdr)) : TPACKET_ALIGN(sizeof(tpacket2_hdr));
    tpacket_req3 tx =
        LayOut(ring->m_tx, TPACKET_ALIGN(ring->m_txDataOffset + cfg.maxFrameBytes), cfg.txFrames);
    if (setsockopt(fd,
                   SOL_PACKET,
                   PACKET_TX_RING,
                   &tx,
                   cfg.blocks ? sizeof(tpacket_req3) : sizeof(tpacket_req)) != 0)
    {
        error = Failure("PACKET_TX_RING") + " (" + std::to_string(ring->m_tx.slots) + " slots of " +
                std::to_string(ring->m_tx.slotBytes) + " bytes)";
        return nullptr; // the receive ring goes with the socket
    }
    ring->m_mapBytes = rxBytes + size_t(tx.tp_block_size) * tx.tp_block_nr;
    void* map = mmap(nullptr, ring->m_mapBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
    {
        error = Failure("mmap of the packet rings") + " (" + std::to_string(ring->m_mapBytes) +
                " bytes)";
        return nullptr;
    }
    ring->m_map = static_cast<uint8_t*>(map);
    ring->m_rxSlots.base = ring->m_map;
    ring->m_tx.base = ring->m_map + rxBytes;
    return ring;
}

PacketRing::~PacketRing()
{
    if (m_map)
    {
        munmap(m_map, m_mapBytes);
    }
}

size_t
PacketRing::Receive(size_t maxFrames, const FrameVisitor& visit)
{
    return m_v3 ? ReceiveBlocks(std::max<size_t>(1, maxFrames / 8), visit)
                : ReceiveSlots(maxFrames, visit);
}

size_t
PacketRing::ReceiveSlots(size_t maxFrames, const FrameVisitor& visit)
{
    size_t frames = 0;
    for (; frames < maxFrames; ++frames)
    {
        uint8_t* at = m_rxSlots.Next();
        auto* h = reinterpret_cast<tpacket2_hdr*>(at);
        if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
        {
            break;
        }
        visit(FrameAt(h));
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        m_rxSlots.Advance();
    }
    return frames;
}

size_t
PacketRing::ReceiveBlocks(size_t maxBlocks, const FrameVisitor& visit)
{
    size_t frames = 0;
    for (size_t b = 0; b < maxBlocks; ++b)
    {
        auto* desc =
            reinterpret_cast<tpacket_block_desc*>(m_map + size_t(m_nextBlock) * m_blockBytes);
        if (!(__atomic_load_n(&desc->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
        {
            break;
        }
        const uint32_t count = desc->hdr.bh1.num_pkts;
        const uint8_t* at =
            reinterpret_cast<const uint8_t*>(desc) + desc->hdr.bh1.offset_to_first_pkt;
        for (uint32_t i = 0; i < count; ++i)
        {
            const auto* h = reinterpret_cast<const tpacket3_hdr*>(at);
            visit(FrameAt(h));
            ++frames;
            at += h->tp_next_offset;
        }
        __atomic_store_n(&desc->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        m_nextBlock = m_nextBlock + 1 == m_blocks ? 0 : m_nextBlock + 1;
    }
    return frames;
}

uint32_t*
PacketRing::TxStatus(uint8_t* slot) const
{
    return m_v3 ? &reinterpret_cast<tpacket3_hdr*>(slot)->tp_status
                : &reinterpret_cast<tpacket2_hdr*>(slot)->tp_status;
}

uint8_t*
PacketRing::TxSlot()
{
    uint8_t* slot = m_tx.Next();
    const uint32_t status = __atomic_load_n(TxStatus(slot), __ATOMIC_ACQUIRE);
    if (status != TP_STATUS_AVAILABLE && status != TP_STATUS_WRONG_FORMAT)
    {
        return nullptr; // ready and not yet taken, or taken and not yet sent
    }
    return slot + m_txDataOffset + m_txVnetBytes;
}

void
PacketRing::TxCommit(uint32_t length)
{
    uint8_t* slot = m_tx.Next();
    if (m_txVnetBytes > 0)
    {
        // No offloads; hdr_len = the whole frame, so the kernel copies it into the packet.
        uint8_t* vnet = slot + m_txDataOffset;
        std::memset(vnet, 0, VNET_HDR_BYTES);
        vnet[VNET_HDR_LEN_OFFSET] = uint8_t(length);
        vnet[VNET_HDR_LEN_OFFSET + 1] = uint8_t(length >> 8);
        length += m_txVnetBytes;
    }
    if (m_v3)
    {
        auto* h = reinterpret_cast<tpacket3_hdr*>(slot);
        h->tp_len = length;
        h->tp_snaplen = length;
        h->tp_next_offset = 0; // the kernel refuses variable-sized transmit slots
    }
    else
    {
        auto* h = reinterpret_cast<tpacket2_hdr*>(slot);
        h->tp_len = length;
        h->tp_snaplen = length;
    }
    __atomic_store_n(TxStatus(slot), TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
    m_tx.Advance();
    ++m_txPending;
}

int
PacketRing::Flush(int fd)
{
    if (m_txPending == 0)
    {
        return 0;
    }
    if (send(fd, nullptr, 0, MSG_DONTWAIT) < 0)
    {
        return errno;
    }
    m_txPending = 0;
    return 0;
}

uint64_t
PacketSocketDrops(int fd)
{
    // Both layouts start with tp_packets and tp_drops; reading resets the kernel's counts.
    tpacket_stats_v3 stats{};
    socklen_t len = sizeof(stats);
    if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &stats, &len) != 0)
    {
        return 0;
    }
    return stats.tp_drops;
}

uint64_t
PacketRing::ReadDrops(int fd)
{
    return PacketSocketDrops(fd);
}

std::string
PacketRing::Describe() const
{
    const std::string tx = ", tx " + std::to_string(m_tx.slots) + " slots" +
                           (m_txVnetBytes > 0 ? " (copied on send)" : "");
    if (!m_v3)
    {
        return "TPACKET_V2 rx " + std::to_string(m_rxSlots.slots) + " slots" + tx;
    }
    return "TPACKET_V3 rx " + std::to_string(m_blocks) + "x" + std::to_string(m_blockBytes / 1024) +
           " KiB (retire " + std::to_string(m_retireMs) + " ms)" + tx;
}

} // namespace hil
} // namespace metaroce
