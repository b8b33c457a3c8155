/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RANDOM_H
#define METAROCE_RANDOM_H

#include <cstdint>

namespace metaroce
{

/**
 * Small deterministic PRNG (xoshiro256** seeded through splitmix64). The host supplies the
 * seed (an ns-3 random stream or the HIL configuration): the engine never draws global or
 * hardware randomness, so a seed reproduces a run bit for bit.
 */
class Rng
{
  public:
    /// Seed the generator.
    explicit Rng(uint64_t seed = 1)
    {
        Seed(seed);
    }

    /// Re-seed the generator.
    void Seed(uint64_t seed)
    {
        for (auto& s : m_s)
        {
            seed += 0x9E3779B97F4A7C15ull;
            uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            s = z ^ (z >> 31);
        }
    }

    /// \return the next 64 random bits.
    uint64_t Next()
    {
        uint64_t result = Rotl(m_s[1] * 5, 7) * 9;
        uint64_t t = m_s[1] << 17;
        m_s[2] ^= m_s[0];
        m_s[3] ^= m_s[1];
        m_s[1] ^= m_s[2];
        m_s[0] ^= m_s[3];
        m_s[2] ^= t;
        m_s[3] = Rotl(m_s[3], 45);
        return result;
    }

    /// \return a uniform integer in [0, \p n) (n > 0).
    uint64_t Below(uint64_t n)
    {
        return Next() % n;
    }

    /// \return a uniform double in [0, 1).
    double Uniform()
    {
        return double(Next() >> 11) * (1.0 / 9007199254740992.0);
    }

  private:
    static uint64_t Rotl(uint64_t x, int k)
    {
        return (x << k) | (x >> (64 - k));
    }

    uint64_t m_s[4]; //!< generator state
};

} // namespace metaroce

#endif // METAROCE_RANDOM_H
