// Package ui is lagscope's live terminal UI, a bubbletea program
// that draws what a peer publishes through a feed.Feed and nothing else.
//
// It reads Updates only; its one way back into the engine is Feed.Control
// (quit, game speed, start the game from the host's lobby, the Path view's
// trace, a load test and its cancel). What it shows, and the requirements
// behind each part (docs/requirements.md):
//
//   - header: session, you, master, frame rate (S15), the timing in force and
//     the target (S1, S12), the tier as a coloured word (S17), the clock;
//   - link table: per private link its state, SRTT, RTTVAR, RTO, connection
//     timeout (T3, T4, T7, T10, T11), resend share, inbound loss share and the
//     peer-reported outbound loss share (L1, L4), the wait this peer caused,
//     and an SRTT sparkline; unknown values are "—", never 0 (L3);
//   - round-trip chart and loss lanes for the focused link, the lanes
//     differenced per interval from the cumulative totals (L5), with the
//     L8 hint when resends run far above observed loss;
//   - the rung ladder (S2–S4, S17) with the timing in force, the target and a
//     staged decrease step by step (S12);
//   - the message list, newest first (S18);
//   - the options dialog with the disabled mirrored Connection slider and the
//     Speed slider (S17);
//   - the Matrix view: every player to every player from the
//     players' telemetry, each cell coloured by the tier that link alone
//     needs (S3, S17) and marked when unmeasured, provisional or bad (L3,
//     T4, T11), each player's waits and whom it waited for, and the ranking
//     of who makes the others wait most (S5);
//   - the Diagnosis view: the engine's verdict (also in the
//     header), each player's share of the trouble with the evidence behind
//     every cause, and the links slower than their players explain;
//   - the Link view: the focused link's figures, its charts and its Load
//     section (a load test's phases while it runs, then its result; the
//     L key asks before it starts one);
//   - the Path view: the focused link's hop trace on the game's own
//     socket, hop by hop, and where delay and loss start;
//   - the lobby: who is seated, the join line and what an internet player
//     needs, and the host's s to start now;
//   - alerts as marked lines of the message list, with the
//     terminal bell when the user turns it on (b);
//   - in a replay (a feed with Playback's methods): space, ←/→ and
//     -/+ pause, seek and change the speed of playback, and the header
//     shows the position.
//
// Themes come from package themes; the tier is always also written as a
// word so nothing depends on colour (NO_COLOR is respected).
//
// Layout: model.go only routes; each pane (header, link table, charts,
// ladder, messages, players, matrix, diagnosis, options dialog, help) is a
// type with its own state, keys and view, sharing one ctx (size, styles,
// keys, the mouse's hit map). Text from outside enters through safe.go.
//
// Redraws are capped at ten a second: the program's renderer runs at 10 fps
// and View caches its picture until something it shows has changed; each
// pane keeps the parts of the picture it draws with their inputs, in a
// memo (memo.go), and draws a part again only when they change.
package ui
