/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_SCENARIO_H
#define METAROCE_RUN_SCENARIO_H

#include "metaroce-results.pb.h"

#include "ns3/metaroce-nic.h"
#include "ns3/nstime.h"
#include "ns3/type-id.h"

#include <google/protobuf/text_format.h>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

/**
 * \file
 * The scenario layer of the scenario runner (metaroce-run): a scenario assembled from its file
 * and the command-line overrides, with the location of every field; the NIC settings given
 * outside the scenario's transport fields; and the completed, validated scenario with its
 * connection configuration. Nothing here builds or runs a simulation, and nothing exits: bad
 * input throws ScenarioError, whose message names the file, line and column, or the option.
 */

namespace metaroce_run
{

/// Bad input (scenario file, override or command-line value); the runner exits with 2.
class ScenarioError : public std::runtime_error
{
  public:
    /// \param message what is wrong, with its location
    explicit ScenarioError(const std::string& message)
        : std::runtime_error(message)
    {
    }
};

/// One text merged into the scenario (the file, then each override), with field locations.
struct ScenarioSource
{
    std::string label;                                                 //!< file or option
    bool isFile{false};                                                //!< label is a file
    std::unique_ptr<google::protobuf::TextFormat::ParseInfoTree> tree; //!< field locations
};

/// The scenario being assembled and where each field came from.
class ScenarioLoader
{
  public:
    /**
     * Merge a text-format snippet (throws ScenarioError with the location on a syntax error).
     * \param text the text
     * \param label file name or option, for messages
     * \param isFile whether \p label is a file
     * \param verbatim whether \p text is what the user typed (syntax errors give its column)
     */
    void Merge(const std::string& text, const std::string& label, bool isFile, bool verbatim);

    /**
     * Where a field was last set.
     * \param path dotted field path, e.g. "topology.leaves" or "loss.fail_link[1].a"
     * \return "file:line:column", "option '...'", or "scenario default"
     */
    std::string Where(const std::string& path) const;

    /**
     * Report an invalid value: throws ScenarioError.
     * \param path dotted field path
     * \param what what is wrong
     */
    [[noreturn]] void Invalid(const std::string& path, const std::string& what) const;

    /// \return the scenario.
    metaroce::results::Scenario& Get();

    /// \return the scenario.
    const metaroce::results::Scenario& Get() const;

  private:
    /**
     * \param src a merged text
     * \param line 0-based line in it
     * \param column 0-based column
     * \return "file:line:column", or the option
     */
    static std::string Describe(const ScenarioSource& src, int line, int column);

    /**
     * Find a field's location in one parse tree.
     * \param root the tree
     * \param path dotted field path
     * \param[out] line 0-based line
     * \param[out] column 0-based column
     * \return true if found
     */
    static bool Locate(const google::protobuf::TextFormat::ParseInfoTree& root,
                       const std::string& path,
                       int& line,
                       int& column);

    metaroce::results::Scenario m_scenario; //!< the merged scenario
    std::vector<ScenarioSource> m_sources;  //!< merged texts in order
};

/**
 * Turn a --set argument into text format: "a.b.c=value" becomes "a { b { c: value } }"
 * (string values quoted if they are not); anything else is taken as text format. Throws
 * ScenarioError on a path that names no field.
 * \param arg the argument
 * \return the text-format snippet
 */
std::string SetToTextFormat(const std::string& arg);

/**
 * The names an enum attribute takes, from its checker's description ("a|b|c"); ns-3's
 * EnumValue asserts on any other name (and reads past its list where asserts are compiled out),
 * so a name is checked against these before ns-3 sees it.
 * \param info the attribute
 * \return the names, or none if the attribute is not an enum
 */
std::vector<std::string> EnumChoices(const ns3::TypeId::AttributeInformation& info);

/**
 * Check an ns-3 attribute given by name and string value.
 * \param tid the type that must have it
 * \param a the attribute
 * \return "" if valid, else what is wrong
 */
std::string CheckAttribute(ns3::TypeId tid, const metaroce::results::Attribute& a);

/**
 * Check an attribute default given on the command line (`--ns3::MetaRoceNic::Mtu=2048`) before
 * ns-3's CommandLine applies it: throws ScenarioError naming the option on an unknown type or
 * attribute or a bad value (ns-3 would exit 1 after its help text, or, for an enum name it does
 * not know, assert). Options without "::" (the runner's own, ns-3's global values) are left to
 * CommandLine.
 * \param arg one command-line argument
 */
void CheckAttributeOption(const std::string& arg);

/**
 * The NIC settings that come from somewhere other than the scenario's transport fields:
 * ns3::MetaRoceNic defaults changed for the whole program (`--ns3::MetaRoceNic::X=V` or
 * NS_ATTRIBUTE_DEFAULT) and transport.nic_attributes. The transport fields (paths, cc, ...) are
 * the same settings under friendlier names, so the runner takes a field left out from here and
 * rejects a field that disagrees with a value given here: a silent winner ran AIMD for a user
 * who asked for another congestion control.
 */
class NicSettings
{
  public:
    /**
     * Check transport.nic_attributes and apply them, in order, to \p nic (a later entry of the
     * same name replaces an earlier one, so a --set entry replaces the file's); throws
     * ScenarioError on a bad one or on one that disagrees with a changed ns-3 default.
     * \param loader the scenario and its sources
     * \param nic a NIC created with the program's defaults; receives the attributes
     */
    NicSettings(const ScenarioLoader& loader, ns3::Ptr<ns3::MetaRoceNic> nic);

    /**
     * \param attribute a MetaRoceNic attribute
     * \return where its value came from, or "" if it is the built-in default
     */
    std::string Origin(const std::string& attribute) const;

    /**
     * Throw ScenarioError when a transport field given in the scenario disagrees with the NIC
     * attribute that holds the same setting and was given too.
     * \param loader the scenario and its sources
     * \param field the dotted field path
     * \param attribute the MetaRoceNic attribute
     * \param value the field's value, for the message
     * \param agrees whether the field's value equals the attribute's
     */
    void Agree(const ScenarioLoader& loader,
               const std::string& field,
               const std::string& attribute,
               const std::string& value,
               bool agrees) const;

  private:
    /// By attribute: where its value came from.
    std::map<std::string, std::string> m_origins;
    /// By attribute: program-wide defaults that differ from the built-in ones (origin, value).
    std::map<std::string, std::pair<std::string, std::string>> m_programDefaults;
};

/**
 * \param us microseconds
 * \return the ns-3 time, rounded to the nanosecond
 */
ns3::Time FromUs(double us);

/**
 * \param t a time
 * \return it in microseconds
 */
double ToUs(ns3::Time t);

/**
 * \param value a number
 * \param decimals digits after the point
 * \return it in fixed notation
 */
std::string Fixed(double value, int decimals);

} // namespace metaroce_run

#endif // METAROCE_RUN_SCENARIO_H
