/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_SEEDED_TEST_CASE_H
#define METAROCE_SEEDED_TEST_CASE_H

#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/test.h"

#include <sstream>
#include <string>
#include <vector>

namespace metaroce_test
{

/**
 * \ingroup metaroce-tests
 * A test case of the module's suites: random streams seeded (seed 1, run 1) before it, and the
 * simulator destroyed after it, also after a failed assertion returned from DoRun early.
 */
class SeededTestCase : public ns3::TestCase
{
  public:
    /// \param name the test's name
    explicit SeededTestCase(const std::string& name)
        : ns3::TestCase(name)
    {
    }

  private:
    void DoSetup() override
    {
        ns3::RngSeedManager::SetSeed(1);
        ns3::RngSeedManager::SetRun(1);
    }

    void DoTeardown() override
    {
        ns3::Simulator::Destroy();
    }
};

/**
 * \param values the values
 * \return them as "a b c " (for comparing sequences in NS_TEST_* messages)
 */
template <typename T>
std::string
Join(const std::vector<T>& values)
{
    std::ostringstream out;
    for (const T& v : values)
    {
        out << v << ' ';
    }
    return out.str();
}

} // namespace metaroce_test

#endif // METAROCE_SEEDED_TEST_CASE_H
