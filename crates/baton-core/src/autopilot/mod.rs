//! The rules of running BMad's own skills unattended, as pure values: reading the JSON status a
//! headless skill ends with ([`headless`]), finding a menu in an agent's turn ([`menu`]), how sure baton is of a decision ([`confidence`]), when a validation
//! loop has stalled or must stop ([`stall`]), when a party of agents is called and how it ends
//! ([`party`]), and how much a project's tier lets baton do between human checkpoints
//! ([`tier`]), reading a validation out of a turn ([`validation`]) what a turn is and how a menu
//! is answered ([`turn`]), the hooks a skill's frontmatter declares ([`hooks`]), and
//! watching a status file for changes made outside a run ([`watch`]). The `baton bmad` workflow reads them; nothing here does IO or keeps a clock.

pub mod confidence;
pub mod headless;
pub mod hooks;
pub mod menu;
pub mod party;
pub mod stall;
pub mod tier;
pub mod turn;
pub mod validation;
pub mod watch;
