//! Read snapshots of a main database file for the connections of this
//! module: a reader sees the file as it was when its read transaction began,
//! even while the writer writes the file, so readers never wait for a writer
//! and a writer never waits for readers.
//!
//! Why: with a rollback journal, a writer whose changes outgrow its page
//! cache writes them into the file before COMMIT, and SQLite's lock protocol
//! then shuts readers out until the transaction ends; a writer that keeps
//! everything in its cache instead writes it all in one COMMIT, which holds
//! the one thread of a Worker for as long as that takes (about a second at
//! 1M rows). Both break the web SDK's promise that queries run during a long
//! apply. WAL would fix the first, but its checkpoint is again one long
//! call. So the wrapper VFS ([`crate::vfs_wrapper`]) keeps, for each write
//! transaction, the page images it overwrites ("before images"), the way a
//! rollback journal does, and serves a reader from them: the writer may
//! spill at will, in small pieces, and COMMIT writes only what is left.
//!
//! Versions count the write transactions that changed the file. A reader
//! takes the current version when it takes SHARED and reads through every
//! set of before images from its version on, the oldest first, then the
//! file. A set is dropped once no reader has a version at or below it. A
//! connection whose snapshot is older than the file can read on but not
//! write: [`Snapshots::is_stale`] is how the lock table refuses it (as WAL
//! refuses with SQLITE_BUSY_SNAPSHOT).
//!
//! This is pure bookkeeping: the file is reached through closures, so the
//! logic is tested natively below. Memory: a set holds the old images of the
//! pages a transaction changed that existed before it (what its journal
//! holds), kept until its readers finish; pages it appends cost nothing. A
//! writer with the file to itself (no other handle open) keeps no images,
//! and a handle opened meanwhile waits for its transaction to end, as under
//! SQLite's own locks.

use std::collections::{BTreeMap, HashMap};

/// Bytes per before image. Any write is kept in whole units, whatever its
/// page size: a unit is kept before any byte of it changes.
const UNIT: u64 = 4096;

fn units(offset: u64, len: u64) -> std::ops::Range<u64> {
    offset / UNIT..(offset + len).div_ceil(UNIT)
}

/// The before images of one write transaction: the file as it was at
/// `version`, where the transaction changed it.
struct BeforeImages {
    version: u64,
    /// The file's size at `version`.
    size: u64,
    /// No other handle was open when the transaction began writing, so no
    /// image is kept, and no handle may take SHARED until it ends.
    blind: bool,
    /// Unit index -> its bytes at `version` (shorter only at the end of the file).
    images: HashMap<u64, Box<[u8]>>,
    /// The bytes of `images`, kept as they are added: stats read it after
    /// every apply step.
    held: u64,
}

/// The versions of one main database file and the before images its
/// readers still need.
#[derive(Default)]
pub struct Snapshots {
    /// Write transactions that changed the file so far.
    current: u64,
    /// Oldest first; the last may be the open write transaction's
    /// (`version == current`).
    sets: Vec<BeforeImages>,
    /// Version -> how many read snapshots hold it.
    readers: BTreeMap<u64, u32>,
    /// Handles open on the file (readers or not).
    handles: u32,
}

impl Snapshots {
    /// A handle on the file was opened.
    pub fn open_handle(&mut self) {
        self.handles += 1;
    }

    /// A handle on the file was closed.
    pub fn close_handle(&mut self) {
        self.handles = self.handles.saturating_sub(1);
    }

    /// Whether a snapshot cannot begin now: the open write transaction
    /// keeps no images (it had the file to itself), so a handle must wait
    /// for it to end, as under SQLite's own locks.
    pub fn blind(&self) -> bool {
        self.sets.last().is_some_and(|set| set.blind && set.version == self.current)
    }

    /// A read snapshot begins (a handle took SHARED): returns its version.
    pub fn begin_read(&mut self) -> u64 {
        *self.readers.entry(self.current).or_default() += 1;
        self.current
    }

    /// The read snapshot `version` ends (its handle unlocked).
    pub fn end_read(&mut self, version: u64) {
        if let Some(n) = self.readers.get_mut(&version) {
            *n -= 1;
            if *n == 0 {
                self.readers.remove(&version);
            }
        }
        self.collect();
    }

    /// Whether a snapshot at `version` misses a committed change: such a
    /// connection must not write, it would overwrite what it never saw.
    pub fn is_stale(&self, version: u64) -> bool {
        version < self.current
    }

    /// The writer is about to write `len` bytes at `offset`: keeps the
    /// current content of every unit there not kept yet and inside the file
    /// as it was when the transaction began. `file_size` and `read` reach the
    /// file as it is now; `read` fills the whole buffer or fails.
    pub fn before_write<E>(
        &mut self,
        offset: u64,
        len: u64,
        file_size: impl FnOnce() -> Result<u64, E>,
        mut read: impl FnMut(u64, &mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let set = self.open_set(file_size)?;
        if set.blind {
            return Ok(());
        }
        for unit in units(offset, len) {
            let start = unit * UNIT;
            if start >= set.size || set.images.contains_key(&unit) {
                continue;
            }
            let mut image = vec![0; (set.size - start).min(UNIT) as usize].into_boxed_slice();
            read(start, &mut image)?;
            set.held += image.len() as u64;
            set.images.insert(unit, image);
        }
        Ok(())
    }

    /// The writer is about to set the file's size to `size` (cut or grow
    /// it): keeps what lies past `size`, and the size it had.
    pub fn before_truncate<E>(
        &mut self,
        size: u64,
        file_size: impl FnOnce() -> Result<u64, E>,
        read: impl FnMut(u64, &mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let now = file_size()?;
        self.open_set(|| Ok(now))?;
        if size >= now {
            return Ok(());
        }
        self.before_write(size, now - size, || Ok(now), read)
    }

    /// The writer may change the file's size without a write (SQLite's
    /// size hint, which the OPFS storage turns into a resize): the
    /// transaction's set records the size first.
    pub fn before_resize<E>(&mut self, file_size: impl FnOnce() -> Result<u64, E>) -> Result<(), E> {
        self.open_set(file_size).map(|_| ())
    }

    /// The writer's transaction ended (it dropped below RESERVED): if it
    /// changed the file, that is the next version.
    pub fn end_write(&mut self) {
        if self.sets.last().is_some_and(|set| set.version == self.current) {
            self.current += 1;
        }
        self.collect();
    }

    /// The size of the file for a snapshot at `version`, if it differs
    /// from the file's own.
    pub fn size(&self, version: u64) -> Option<u64> {
        self.sets.iter().find(|set| set.version >= version).map(|set| set.size)
    }

    /// Reads `buf.len()` bytes at `offset` as the snapshot `version` sees
    /// them, or returns `None` if that is the file as it is now: the caller
    /// reads it itself, keeping the base VFS's own result. `read` reads the
    /// file as it is now, zero-filling past its end. `Some(Ok(short))` says
    /// whether the read went past the snapshot's end of file (the bytes
    /// there are zeros), SQLite's short read.
    pub fn read<E>(
        &self,
        version: u64,
        offset: u64,
        buf: &mut [u8],
        read: impl FnOnce(u64, &mut [u8]) -> Result<(), E>,
    ) -> Option<Result<bool, E>> {
        // Sets are oldest first: those the snapshot needs are a suffix.
        let first = self.sets.iter().position(|set| set.version >= version)?;
        let sets = &self.sets[first..];
        if let Err(e) = read(offset, buf) {
            return Some(Err(e));
        }
        let len = buf.len() as u64;
        // The newest set first, so that the oldest image of a byte, the one
        // this snapshot saw, is the last written.
        for set in sets.iter().rev() {
            for unit in units(offset, len) {
                let Some(image) = set.images.get(&unit) else { continue };
                let start = unit * UNIT;
                let from = start.max(offset);
                let to = (start + image.len() as u64).min(offset + len);
                if from < to {
                    buf[(from - offset) as usize..(to - offset) as usize]
                        .copy_from_slice(&image[(from - start) as usize..(to - start) as usize]);
                }
            }
        }
        let size = sets[0].size;
        if offset + len > size {
            buf[size.saturating_sub(offset) as usize..].fill(0);
            return Some(Ok(true));
        }
        Some(Ok(false))
    }

    /// Bytes of before images held (for stats).
    pub fn held_bytes(&self) -> u64 {
        self.sets.iter().map(|set| set.held).sum()
    }

    /// The open write transaction's set, begun at the file's size now;
    /// blind if no other handle is open.
    fn open_set<E>(&mut self, file_size: impl FnOnce() -> Result<u64, E>) -> Result<&mut BeforeImages, E> {
        if self.sets.last().is_none_or(|set| set.version != self.current) {
            let blind = self.handles <= 1;
            self.sets.push(BeforeImages { version: self.current, size: file_size()?, blind, images: HashMap::new(), held: 0 });
        }
        Ok(self.sets.last_mut().expect("pushed above"))
    }

    /// Drops the sets no snapshot needs: older than the current version and
    /// newer than every reader.
    fn collect(&mut self) {
        let oldest_reader = self.readers.keys().next().copied().unwrap_or(u64::MAX);
        let current = self.current;
        self.sets.retain(|set| set.version >= current || set.version >= oldest_reader);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file, and the snapshots of its handles.
    struct File {
        bytes: Vec<u8>,
        snapshots: Snapshots,
    }

    const PAGE: usize = 4096;

    impl File {
        fn new(pages: u8) -> Self {
            let bytes = (0..pages).flat_map(|p| vec![p; PAGE]).collect();
            let mut snapshots = Snapshots::default();
            // The writer's handle and a reader's.
            snapshots.open_handle();
            snapshots.open_handle();
            File { bytes, snapshots }
        }

        fn write(&mut self, page: usize, fill: u8) {
            let bytes = &self.bytes;
            self.snapshots
                .before_write(
                    (page * PAGE) as u64,
                    PAGE as u64,
                    || Ok::<_, ()>(bytes.len() as u64),
                    |at, buf| {
                        buf.copy_from_slice(&bytes[at as usize..at as usize + buf.len()]);
                        Ok(())
                    },
                )
                .unwrap();
            if self.bytes.len() < (page + 1) * PAGE {
                self.bytes.resize((page + 1) * PAGE, 0);
            }
            self.bytes[page * PAGE..(page + 1) * PAGE].fill(fill);
        }

        fn truncate(&mut self, pages: usize) {
            let bytes = &self.bytes;
            self.snapshots
                .before_truncate(
                    (pages * PAGE) as u64,
                    || Ok::<_, ()>(bytes.len() as u64),
                    |at, buf| {
                        buf.copy_from_slice(&bytes[at as usize..at as usize + buf.len()]);
                        Ok(())
                    },
                )
                .unwrap();
            self.bytes.truncate(pages * PAGE);
        }

        /// (bytes, short) of `len` bytes at `offset` for the snapshot `version`.
        fn read(&self, version: u64, offset: usize, len: usize) -> (Vec<u8>, bool) {
            let mut buf = vec![0xEE; len];
            let read_file = |at: u64, buf: &mut [u8]| {
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = self.bytes.get(at as usize + i).copied().unwrap_or(0);
                }
                Ok::<_, ()>(())
            };
            let short = match self.snapshots.read(version, offset as u64, &mut buf, read_file) {
                Some(result) => result.unwrap(),
                None => {
                    read_file(offset as u64, &mut buf).unwrap();
                    offset + len > self.bytes.len()
                }
            };
            (buf, short)
        }

        fn page(&self, version: u64, page: usize) -> u8 {
            let (bytes, _) = self.read(version, page * PAGE, PAGE);
            assert!(bytes.iter().all(|b| *b == bytes[0]), "page {page} is one value");
            bytes[0]
        }

        fn size(&self, version: u64) -> u64 {
            self.snapshots.size(version).unwrap_or(self.bytes.len() as u64)
        }
    }

    #[test]
    fn a_reader_sees_the_file_as_it_began_until_it_ends() {
        let mut file = File::new(4);
        let old = file.snapshots.begin_read();
        file.write(1, 0xA1);
        file.write(6, 0xA6); // appended: nothing to keep
        file.write(1, 0xB1); // kept once
        assert_eq!(file.snapshots.held_bytes(), PAGE as u64);
        // A reader that begins during the transaction gets the same version.
        let during = file.snapshots.begin_read();
        assert_eq!(during, old);
        file.snapshots.end_write();
        let new = file.snapshots.begin_read();
        assert!(new > old);
        assert!(file.snapshots.is_stale(old) && !file.snapshots.is_stale(new));
        for v in [old, during] {
            assert_eq!((0..4).map(|p| file.page(v, p)).collect::<Vec<_>>(), [0, 1, 2, 3]);
            assert_eq!(file.size(v), 4 * PAGE as u64);
        }
        assert_eq!(file.page(new, 1), 0xB1);
        assert_eq!(file.page(new, 6), 0xA6);
        assert_eq!(file.size(new), 7 * PAGE as u64);
        // Past the snapshot's end: zeros and a short read, though the file
        // has bytes there now.
        let (bytes, short) = file.read(old, 5 * PAGE, 16);
        assert!(short && bytes.iter().all(|b| *b == 0));
        // A read across the snapshot's end keeps what lies before it.
        let (bytes, short) = file.read(old, 4 * PAGE - 8, 16);
        assert!(short);
        assert_eq!(bytes, [[3u8; 8], [0u8; 8]].concat());
        // Sub-page reads (SQLite reads its header at offsets 0 and 24).
        let (bytes, short) = file.read(old, PAGE + 24, 16);
        assert!(!short && bytes == [1; 16]);
        file.snapshots.end_read(old);
        assert_eq!(file.snapshots.held_bytes(), PAGE as u64, "`during` still reads version {old}");
        file.snapshots.end_read(during);
        assert_eq!(file.snapshots.held_bytes(), 0);
        assert_eq!(file.snapshots.size(new), None);
    }

    #[test]
    fn readers_of_several_versions_see_their_own() {
        let mut file = File::new(3);
        let v0 = file.snapshots.begin_read();
        file.write(0, 10);
        file.snapshots.end_write();
        let v1 = file.snapshots.begin_read();
        file.write(0, 20);
        file.write(1, 21);
        file.truncate(2); // page 2 goes
        file.snapshots.end_write();
        let v2 = file.snapshots.begin_read();
        assert_eq!((0..3).map(|p| file.page(v0, p)).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!((0..3).map(|p| file.page(v1, p)).collect::<Vec<_>>(), [10, 1, 2]);
        assert_eq!((0..2).map(|p| file.page(v2, p)).collect::<Vec<_>>(), [20, 21]);
        assert_eq!([file.size(v0), file.size(v1), file.size(v2)], [3, 3, 2].map(|p| p * PAGE as u64));
        // The middle reader ends first: v0 still needs both sets.
        file.snapshots.end_read(v1);
        assert_eq!((0..3).map(|p| file.page(v0, p)).collect::<Vec<_>>(), [0, 1, 2]);
        file.snapshots.end_read(v0);
        assert_eq!(file.snapshots.held_bytes(), 0);
        file.snapshots.end_read(v2);
    }

    #[test]
    fn a_transaction_that_wrote_nothing_makes_no_version() {
        let mut file = File::new(2);
        let v = file.snapshots.begin_read();
        file.snapshots.end_write();
        assert!(!file.snapshots.is_stale(v));
        // A rolled-back transaction wrote its pages back: still a version,
        // and both sides read the same bytes.
        file.write(1, 9);
        file.write(1, 1);
        file.snapshots.end_write();
        assert!(file.snapshots.is_stale(v));
        assert_eq!(file.page(v, 1), 1);
        file.snapshots.end_read(v);
        assert_eq!(file.snapshots.held_bytes(), 0);
    }

    #[test]
    fn odd_writes_are_kept_in_whole_units() {
        let mut snapshots = Snapshots::default();
        snapshots.open_handle();
        snapshots.open_handle();
        let mut bytes: Vec<u8> = (0..=255).cycle().take(3000).collect();
        let original = bytes.clone();
        let v = snapshots.begin_read();
        for (at, len) in [(100u64, 700u64), (2500, 900), (50, 10)] {
            let file = &bytes;
            snapshots
                .before_write(at, len, || Ok::<_, ()>(file.len() as u64), |o, buf| {
                    buf.copy_from_slice(&file[o as usize..o as usize + buf.len()]);
                    Ok(())
                })
                .unwrap();
            bytes.resize(bytes.len().max((at + len) as usize), 0);
            bytes[at as usize..(at + len) as usize].fill(0xFF);
        }
        let mut buf = vec![0; 3000];
        let short = snapshots
            .read(v, 0, &mut buf, |o, out| {
                out.copy_from_slice(&bytes[o as usize..o as usize + out.len()]);
                Ok::<_, ()>(())
            })
            .expect("the snapshot has images")
            .unwrap();
        assert!(!short);
        assert_eq!(buf, original);
    }

    #[test]
    fn a_resize_before_the_first_write_keeps_the_old_size() {
        let mut file = File::new(2);
        let v = file.snapshots.begin_read();
        // SQLite's size hint grows the file before the pages are written.
        let len = file.bytes.len() as u64;
        file.snapshots.before_resize(|| Ok::<_, ()>(len)).unwrap();
        file.bytes.resize(5 * PAGE, 0);
        file.write(3, 7);
        assert_eq!(file.snapshots.held_bytes(), 0, "appended pages keep nothing");
        assert_eq!(file.size(v), 2 * PAGE as u64);
        file.snapshots.end_write();
        assert_eq!(file.size(v), 2 * PAGE as u64);
        file.snapshots.end_read(v);
    }

    #[test]
    fn a_writer_alone_keeps_nothing_and_holds_new_readers_off() {
        let mut file = File::new(3);
        file.snapshots.close_handle(); // the writer alone
        let w = file.snapshots.begin_read();
        file.write(1, 9);
        assert_eq!(file.snapshots.held_bytes(), 0);
        assert!(file.snapshots.blind(), "a handle opened now must wait");
        file.snapshots.end_write();
        assert!(!file.snapshots.blind());
        file.snapshots.end_read(w);
        // With a second handle open, images are kept again.
        file.snapshots.open_handle();
        let r = file.snapshots.begin_read();
        file.write(1, 10);
        assert!(!file.snapshots.blind());
        assert_eq!(file.snapshots.held_bytes(), PAGE as u64);
        assert_eq!(file.page(r, 1), 9);
        file.snapshots.end_write();
        file.snapshots.end_read(r);
    }
}
