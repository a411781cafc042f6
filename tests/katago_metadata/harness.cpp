// gotk's test harness around KataGo's own SGFMetadata code (cpp/neuralnet/sgfmetadata.cpp) and its SGF header
// parsing in cpp/command/writetrainingdata.cpp. build_reference.py compiles it against a KataGo checkout; the
// header-parsing functions are cut out of writetrainingdata.cpp by that script into extracted.inc (the file as
// a whole needs all of KataGo). Nothing here re-implements KataGo: it reads cases, calls KataGo, prints.
//
// Input: one case per line, fields separated by tabs:
//   row <inverseBRank> <inverseWRank> <bIsUnranked> <wIsUnranked> <bRankIsUnknown> <wRankIsUnknown> <bIsHuman>
//       <wIsHuman> <gameIsUnrated> <gameRatednessIsUnknown> <tc 0..6> <mainTimeSeconds> <periodTimeSeconds>
//       <byoYomiPeriods> <canadianMoves> <YYYY-MM-DD> <source> <B|W> <boardArea>
//   profile <name>                 getProfile, then the fields as "row" takes them and the rows for B and W, 361
//   rank <whatDataSource> <text>   parseSGFRank: inverse rank, unranked, unknown
//   bot <whatDataSource> <name>    isLikelyBot
//   time <TM> <OT>                 the KGS/OGS time-control rules: tc kind, main, period, periods, moves
// Output: one line per case, "ok ..." or "error <message>"; a row is 192 float32 bit patterns in hex.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/global.h"
#include "core/datetime.h"
#include "neuralnet/sgfmetadata.h"

using std::string;
using std::vector;

// What the cut-out code of writetrainingdata.cpp refers to around it.
struct HarnessLogger {
  void write(const string&) {}
};

#include "extracted.inc"

static vector<string> splitTabs(const string& line) {
  vector<string> out;
  size_t start = 0;
  while(true) {
    size_t tab = line.find('\t', start);
    if(tab == string::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

static string rowHex(const SGFMetadata& m, Player pla, int area) {
  float row[SGFMetadata::METADATA_INPUT_NUM_CHANNELS];
  SGFMetadata::fillMetadataRow(&m, row, pla, area);
  string out;
  char buf[16];
  for(int i = 0; i < SGFMetadata::METADATA_INPUT_NUM_CHANNELS; i++) {
    uint32_t bits;
    std::memcpy(&bits, &row[i], 4);
    std::snprintf(buf, sizeof(buf), "%08x", bits);
    out += buf;
  }
  return out;
}

static int tcIndex(const SGFMetadata& m) {
  const bool flags[7] = {m.tcIsUnknown, m.tcIsNone, m.tcIsAbsolute, m.tcIsSimple, m.tcIsByoYomi, m.tcIsCanadian,
                         m.tcIsFischer};
  for(int i = 0; i < 7; i++)
    if(flags[i])
      return i;
  return -1;
}

static string fields(const SGFMetadata& m) {
  std::ostringstream o;
  o.precision(17);
  o << m.inverseBRank << " " << m.inverseWRank << " " << m.bIsUnranked << " " << m.wIsUnranked << " "
    << m.bRankIsUnknown << " " << m.wRankIsUnknown << " " << m.bIsHuman << " " << m.wIsHuman << " "
    << m.gameIsUnrated << " " << m.gameRatednessIsUnknown << " " << tcIndex(m) << " " << m.mainTimeSeconds << " "
    << m.periodTimeSeconds << " " << m.byoYomiPeriods << " " << m.canadianMoves << " " << m.gameDate.toString()
    << " " << m.source;
  return o.str();
}

static string runCase(const vector<string>& f) {
  if(f[0] == "row") {
    if(f.size() != 20)
      throw StringError("row needs 19 fields");
    SGFMetadata m;
    m.initialized = true;
    m.inverseBRank = Global::stringToInt(f[1]);
    m.inverseWRank = Global::stringToInt(f[2]);
    m.bIsUnranked = f[3] == "1";
    m.wIsUnranked = f[4] == "1";
    m.bRankIsUnknown = f[5] == "1";
    m.wRankIsUnknown = f[6] == "1";
    m.bIsHuman = f[7] == "1";
    m.wIsHuman = f[8] == "1";
    m.gameIsUnrated = f[9] == "1";
    m.gameRatednessIsUnknown = f[10] == "1";
    int tc = Global::stringToInt(f[11]);
    m.tcIsUnknown = tc == 0;
    m.tcIsNone = tc == 1;
    m.tcIsAbsolute = tc == 2;
    m.tcIsSimple = tc == 3;
    m.tcIsByoYomi = tc == 4;
    m.tcIsCanadian = tc == 5;
    m.tcIsFischer = tc == 6;
    m.mainTimeSeconds = Global::stringToDouble(f[12]);
    m.periodTimeSeconds = Global::stringToDouble(f[13]);
    m.byoYomiPeriods = Global::stringToInt(f[14]);
    m.canadianMoves = Global::stringToInt(f[15]);
    m.gameDate = SimpleDate(f[16]);
    m.source = Global::stringToInt(f[17]);
    return rowHex(m, f[18] == "W" ? P_WHITE : P_BLACK, Global::stringToInt(f[19]));
  }
  if(f[0] == "profile") {
    SGFMetadata m = SGFMetadata::getProfile(f[1]);
    return fields(m) + " " + rowHex(m, P_BLACK, 361) + " " + rowHex(m, P_WHITE, 361);
  }
  if(f[0] == "rank") {
    int inverseRank = -1;
    bool isUnranked = false;
    bool isUnknown = false;
    parseSGFRank(f[2], inverseRank, isUnranked, isUnknown, f[1]);
    return Global::intToString(inverseRank) + " " + (isUnranked ? "1" : "0") + " " + (isUnknown ? "1" : "0");
  }
  if(f[0] == "bot")
    return isLikelyBot(f[2], f[1]) ? "1" : "0";
  if(f[0] == "time") {
    SGFMetadata m;
    string rejected = kgsTimeControl(f[1], f[2], m);
    if(rejected != "")
      throw StringError(rejected);
    std::ostringstream o;
    o.precision(17);
    o << tcIndex(m) << " " << m.mainTimeSeconds << " " << m.periodTimeSeconds << " " << m.byoYomiPeriods << " "
      << m.canadianMoves;
    return o.str();
  }
  throw StringError("unknown case kind " + f[0]);
}

int main() {
  string line;
  while(std::getline(std::cin, line)) {
    if(!line.empty() && line.back() == '\r')
      line.pop_back();
    vector<string> f = splitTabs(line);
    try {
      std::cout << "ok " << runCase(f) << "\n";
    }
    catch(const std::exception& e) {
      string msg = e.what();
      for(char& c : msg)
        if(c == '\n')
          c = ' ';
      std::cout << "error " << msg << "\n";
    }
  }
  return 0;
}
