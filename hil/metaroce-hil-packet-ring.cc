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
/// Transmit slots per transmit block (slots never span blocks).
constexpr uint32_t TX_SLOTS_PER_BLOCK = 8;

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

/// \return "what: errno text".
std::string
Failure(const char* what)
{
    return std::string(what) + ": " + std::strerror(errno);
}

} // namespace

std::unique_ptr<PacketRing>
PacketRing::Map(int fd, const PacketRingConfig& cfg, std::string& error)
{
    const uint32_t page = uint32_t(sysconf(_SC_PAGESIZE));
    const uint32_t rxHeader = TPACKET_ALIGN(sizeof(tpacket3_hdr)) + sizeof(sockaddr_ll);
    if (cfg.maxFrameBytes == 0 || cfg.maxFrameBytes > (1u << 20) || cfg.rxBytes == 0 ||
        cfg.txFrames == 0 || cfg.retireTimeoutMs == 0)
    {
        error = "packet ring: bad sizes (frame, blocks, slots and retire timeout must be > 0)";
        return nullptr;
    }
    int version = TPACKET_V3;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) != 0)
    {
        error = Failure("PACKET_VERSION TPACKET_V3");
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
    // Receive: blocks of at least two of the largest frames, a power of two of pages.
    uint32_t block = cfg.rxBlockBytes;
    if (block == 0)
    {
        block = PowerOfTwoAtLeast(2 * (cfg.maxFrameBytes + rxHeader + 64));
    }
    block = RoundUp(std::max(block, page), page);
    if (block < cfg.maxFrameBytes + rxHeader + 64)
    {
        error = "packet ring: a receive block of " + std::to_string(block) +
                " bytes cannot hold a frame of " + std::to_string(cfg.maxFrameBytes);
        return nullptr;
    }
    const uint32_t blocks = std::max<uint32_t>(8, (cfg.rxBytes + block - 1) / block);
    tpacket_req3 rx{};
    rx.tp_block_size = block;
    rx.tp_block_nr = blocks;
    rx.tp_frame_size = RX_FRAME_UNIT;
    rx.tp_frame_nr = block / RX_FRAME_UNIT * blocks;
    rx.tp_retire_blk_tov = cfg.retireTimeoutMs;
    if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &rx, sizeof(rx)) != 0)
    {
        error = Failure("PACKET_RX_RING") + " (" + std::to_string(blocks) + " blocks of " +
                std::to_string(block) + " bytes)";
        return nullptr;
    }
    ring->m_blockBytes = block;
    ring->m_blocks = blocks;
    ring->m_retireMs = cfg.retireTimeoutMs;

    // Transmit: fixed slots (V3 transmits slot by slot, as V2 does), a few per block.
    ring->m_txDataOffset = TPACKET_ALIGN(sizeof(tpacket3_hdr));
    ring->m_txFrameBytes = TPACKET_ALIGN(ring->m_txDataOffset + cfg.maxFrameBytes);
    ring->m_txBlockBytes = RoundUp(ring->m_txFrameBytes * TX_SLOTS_PER_BLOCK, page);
    ring->m_txFramesPerBlock = ring->m_txBlockBytes / ring->m_txFrameBytes;
    const uint32_t txBlocks =
        (cfg.txFrames + ring->m_txFramesPerBlock - 1) / ring->m_txFramesPerBlock;
    ring->m_txFrames = txBlocks * ring->m_txFramesPerBlock;
    ring->m_txSlotData = ring->m_txFrameBytes - ring->m_txDataOffset;
    tpacket_req3 tx{};
    tx.tp_block_size = ring->m_txBlockBytes;
    tx.tp_block_nr = txBlocks;
    tx.tp_frame_size = ring->m_txFrameBytes;
    tx.tp_frame_nr = ring->m_txFrames;
    if (setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &tx, sizeof(tx)) != 0)
    {
        error = Failure("PACKET_TX_RING") + " (" + std::to_string(ring->m_txFrames) + " slots of " +
                std::to_string(ring->m_txFrameBytes) + " bytes)";
        return nullptr; // the receive ring goes with the socket
    }
    const size_t rxBytes = size_t(block) * blocks;
    ring->m_mapBytes = rxBytes + size_t(ring->m_txBlockBytes) * txBlocks;
    void* map = mmap(nullptr, ring->m_mapBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
    {
        error = Failure("mmap of the packet rings") + " (" + std::to_string(ring->m_mapBytes) +
                " bytes)";
        return nullptr;
    }
    ring->m_map = static_cast<uint8_t*>(map);
    ring->m_tx = ring->m_map + rxBytes;
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
PacketRing::Receive(size_t maxBlocks, const FrameVisitor& visit)
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
            const auto* sll =
                reinterpret_cast<const sockaddr_ll*>(at + TPACKET_ALIGN(sizeof(tpacket3_hdr)));
            RingFrame f;
            f.data = at + h->tp_mac;
            f.length = h->tp_snaplen;
            f.wireLength = h->tp_len;
            f.packetType = sll->sll_pkttype;
            visit(f);
            ++frames;
            at += h->tp_next_offset;
        }
        __atomic_store_n(&desc->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        m_nextBlock = (m_nextBlock + 1) % m_blocks;
    }
    return frames;
}

uint8_t*
PacketRing::TxSlot()
{
    uint8_t* slot = m_tx + size_t(m_nextTx / m_txFramesPerBlock) * m_txBlockBytes +
                    size_t(m_nextTx % m_txFramesPerBlock) * m_txFrameBytes;
    auto* h = reinterpret_cast<tpacket3_hdr*>(slot);
    const uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
    if (status != TP_STATUS_AVAILABLE && status != TP_STATUS_WRONG_FORMAT)
    {
        return nullptr; // ready and not yet taken, or taken and not yet sent
    }
    return slot + m_txDataOffset;
}

void
PacketRing::TxCommit(uint32_t length)
{
    uint8_t* slot = m_tx + size_t(m_nextTx / m_txFramesPerBlock) * m_txBlockBytes +
                    size_t(m_nextTx % m_txFramesPerBlock) * m_txFrameBytes;
    auto* h = reinterpret_cast<tpacket3_hdr*>(slot);
    h->tp_len = length;
    h->tp_snaplen = length;
    h->tp_next_offset = 0; // the kernel refuses variable-sized transmit slots
    __atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
    m_nextTx = (m_nextTx + 1) % m_txFrames;
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

std::string
PacketRing::Describe() const
{
    return "TPACKET_V3 rx " + std::to_string(m_blocks) + "x" + std::to_string(m_blockBytes / 1024) +
           " KiB (retire " + std::to_string(m_retireMs) + " ms), tx " + std::to_string(m_txFrames) +
           " slots";
}

} // namespace hil
} // namespace metaroce
