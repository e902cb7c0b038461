--
-- PostgreSQL database dump
--

\restrict Z47sDbdEnti9dKuLbXnRLsvj906r2OTpKLa89OyH1WR3Yj6otm9YT8RYTYBpaRZ

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: jfs_acl; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_acl (
    id integer NOT NULL,
    owner integer,
    "group" integer,
    mask integer,
    other integer,
    named_users bytea,
    named_groups bytea
);


ALTER TABLE public.jfs_acl OWNER TO postgres;

--
-- Name: jfs_acl_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_acl_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_acl_id_seq OWNER TO postgres;

--
-- Name: jfs_acl_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_acl_id_seq OWNED BY public.jfs_acl.id;


--
-- Name: jfs_change_log; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_change_log (
    id bigint NOT NULL,
    entry text NOT NULL
);


ALTER TABLE public.jfs_change_log OWNER TO postgres;

--
-- Name: jfs_change_log_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_change_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_change_log_id_seq OWNER TO postgres;

--
-- Name: jfs_change_log_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_change_log_id_seq OWNED BY public.jfs_change_log.id;


--
-- Name: jfs_chunk; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_chunk (
    id bigint NOT NULL,
    inode bigint NOT NULL,
    indx integer NOT NULL,
    slices bytea NOT NULL
);


ALTER TABLE public.jfs_chunk OWNER TO postgres;

--
-- Name: jfs_chunk_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_chunk_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_chunk_id_seq OWNER TO postgres;

--
-- Name: jfs_chunk_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_chunk_id_seq OWNED BY public.jfs_chunk.id;


--
-- Name: jfs_chunk_ref; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_chunk_ref (
    chunkid bigint NOT NULL,
    size integer NOT NULL,
    refs integer NOT NULL
);


ALTER TABLE public.jfs_chunk_ref OWNER TO postgres;

--
-- Name: jfs_counter; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_counter (
    name character varying(255) NOT NULL,
    value bigint NOT NULL
);


ALTER TABLE public.jfs_counter OWNER TO postgres;

--
-- Name: jfs_delegation_token; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_delegation_token (
    id integer NOT NULL,
    token bytea
);


ALTER TABLE public.jfs_delegation_token OWNER TO postgres;

--
-- Name: jfs_delegation_token_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_delegation_token_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_delegation_token_id_seq OWNER TO postgres;

--
-- Name: jfs_delegation_token_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_delegation_token_id_seq OWNED BY public.jfs_delegation_token.id;


--
-- Name: jfs_delfile; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_delfile (
    inode bigint NOT NULL,
    length bigint NOT NULL,
    expire bigint NOT NULL
);


ALTER TABLE public.jfs_delfile OWNER TO postgres;

--
-- Name: jfs_delslices; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_delslices (
    chunkid bigint NOT NULL,
    deleted bigint NOT NULL,
    slices bytea NOT NULL
);


ALTER TABLE public.jfs_delslices OWNER TO postgres;

--
-- Name: jfs_detached_node; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_detached_node (
    inode bigint NOT NULL,
    added bigint NOT NULL
);


ALTER TABLE public.jfs_detached_node OWNER TO postgres;

--
-- Name: jfs_dir_quota; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_dir_quota (
    inode bigint NOT NULL,
    max_space bigint NOT NULL,
    max_inodes bigint NOT NULL,
    used_space bigint NOT NULL,
    used_inodes bigint NOT NULL
);


ALTER TABLE public.jfs_dir_quota OWNER TO postgres;

--
-- Name: jfs_dir_stats; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_dir_stats (
    inode bigint NOT NULL,
    data_length bigint NOT NULL,
    used_space bigint NOT NULL,
    used_inodes bigint NOT NULL
);


ALTER TABLE public.jfs_dir_stats OWNER TO postgres;

--
-- Name: jfs_edge; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_edge (
    id bigint NOT NULL,
    parent bigint NOT NULL,
    name bytea NOT NULL,
    inode bigint NOT NULL,
    type integer NOT NULL
);


ALTER TABLE public.jfs_edge OWNER TO postgres;

--
-- Name: jfs_edge_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_edge_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_edge_id_seq OWNER TO postgres;

--
-- Name: jfs_edge_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_edge_id_seq OWNED BY public.jfs_edge.id;


--
-- Name: jfs_flock; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_flock (
    id bigint NOT NULL,
    inode bigint NOT NULL,
    sid bigint NOT NULL,
    owner bigint NOT NULL,
    ltype integer NOT NULL
);


ALTER TABLE public.jfs_flock OWNER TO postgres;

--
-- Name: jfs_flock_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_flock_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_flock_id_seq OWNER TO postgres;

--
-- Name: jfs_flock_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_flock_id_seq OWNED BY public.jfs_flock.id;


--
-- Name: jfs_node; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_node (
    inode bigint NOT NULL,
    type integer NOT NULL,
    flags integer NOT NULL,
    mode integer NOT NULL,
    uid integer NOT NULL,
    gid integer NOT NULL,
    atime bigint NOT NULL,
    mtime bigint NOT NULL,
    ctime bigint NOT NULL,
    atimensec integer DEFAULT 0 NOT NULL,
    mtimensec integer DEFAULT 0 NOT NULL,
    ctimensec integer DEFAULT 0 NOT NULL,
    nlink integer NOT NULL,
    length bigint NOT NULL,
    rdev integer,
    parent bigint,
    access_acl_id integer,
    default_acl_id integer,
    tier_id integer
);


ALTER TABLE public.jfs_node OWNER TO postgres;

--
-- Name: jfs_plock; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_plock (
    id bigint NOT NULL,
    inode bigint NOT NULL,
    sid bigint NOT NULL,
    owner bigint NOT NULL,
    records bytea NOT NULL
);


ALTER TABLE public.jfs_plock OWNER TO postgres;

--
-- Name: jfs_plock_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_plock_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_plock_id_seq OWNER TO postgres;

--
-- Name: jfs_plock_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_plock_id_seq OWNED BY public.jfs_plock.id;


--
-- Name: jfs_session2; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_session2 (
    sid bigint NOT NULL,
    expire bigint NOT NULL,
    info bytea
);


ALTER TABLE public.jfs_session2 OWNER TO postgres;

--
-- Name: jfs_setting; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_setting (
    name character varying(255) NOT NULL,
    value text NOT NULL
);


ALTER TABLE public.jfs_setting OWNER TO postgres;

--
-- Name: jfs_sustained; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_sustained (
    id bigint NOT NULL,
    sid bigint NOT NULL,
    inode bigint NOT NULL
);


ALTER TABLE public.jfs_sustained OWNER TO postgres;

--
-- Name: jfs_sustained_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_sustained_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_sustained_id_seq OWNER TO postgres;

--
-- Name: jfs_sustained_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_sustained_id_seq OWNED BY public.jfs_sustained.id;


--
-- Name: jfs_symlink; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_symlink (
    inode bigint NOT NULL,
    target bytea NOT NULL
);


ALTER TABLE public.jfs_symlink OWNER TO postgres;

--
-- Name: jfs_user_group_quota; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_user_group_quota (
    qtype integer NOT NULL,
    qkey bigint NOT NULL,
    max_space bigint NOT NULL,
    max_inodes bigint NOT NULL,
    used_space bigint NOT NULL,
    used_inodes bigint NOT NULL
);


ALTER TABLE public.jfs_user_group_quota OWNER TO postgres;

--
-- Name: jfs_xattr; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.jfs_xattr (
    id bigint NOT NULL,
    inode bigint NOT NULL,
    name character varying(255) NOT NULL,
    value bytea NOT NULL
);


ALTER TABLE public.jfs_xattr OWNER TO postgres;

--
-- Name: jfs_xattr_id_seq; Type: SEQUENCE; Schema: public; Owner: postgres
--

CREATE SEQUENCE public.jfs_xattr_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.jfs_xattr_id_seq OWNER TO postgres;

--
-- Name: jfs_xattr_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: postgres
--

ALTER SEQUENCE public.jfs_xattr_id_seq OWNED BY public.jfs_xattr.id;


--
-- Name: jfs_acl id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_acl ALTER COLUMN id SET DEFAULT nextval('public.jfs_acl_id_seq'::regclass);


--
-- Name: jfs_change_log id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_change_log ALTER COLUMN id SET DEFAULT nextval('public.jfs_change_log_id_seq'::regclass);


--
-- Name: jfs_chunk id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_chunk ALTER COLUMN id SET DEFAULT nextval('public.jfs_chunk_id_seq'::regclass);


--
-- Name: jfs_delegation_token id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_delegation_token ALTER COLUMN id SET DEFAULT nextval('public.jfs_delegation_token_id_seq'::regclass);


--
-- Name: jfs_edge id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_edge ALTER COLUMN id SET DEFAULT nextval('public.jfs_edge_id_seq'::regclass);


--
-- Name: jfs_flock id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_flock ALTER COLUMN id SET DEFAULT nextval('public.jfs_flock_id_seq'::regclass);


--
-- Name: jfs_plock id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_plock ALTER COLUMN id SET DEFAULT nextval('public.jfs_plock_id_seq'::regclass);


--
-- Name: jfs_sustained id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_sustained ALTER COLUMN id SET DEFAULT nextval('public.jfs_sustained_id_seq'::regclass);


--
-- Name: jfs_xattr id; Type: DEFAULT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_xattr ALTER COLUMN id SET DEFAULT nextval('public.jfs_xattr_id_seq'::regclass);


--
-- Name: jfs_acl jfs_acl_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_acl
    ADD CONSTRAINT jfs_acl_pkey PRIMARY KEY (id);


--
-- Name: jfs_change_log jfs_change_log_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_change_log
    ADD CONSTRAINT jfs_change_log_pkey PRIMARY KEY (id);


--
-- Name: jfs_chunk jfs_chunk_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_chunk
    ADD CONSTRAINT jfs_chunk_pkey PRIMARY KEY (id);


--
-- Name: jfs_chunk_ref jfs_chunk_ref_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_chunk_ref
    ADD CONSTRAINT jfs_chunk_ref_pkey PRIMARY KEY (chunkid);


--
-- Name: jfs_counter jfs_counter_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_counter
    ADD CONSTRAINT jfs_counter_pkey PRIMARY KEY (name);


--
-- Name: jfs_delegation_token jfs_delegation_token_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_delegation_token
    ADD CONSTRAINT jfs_delegation_token_pkey PRIMARY KEY (id);


--
-- Name: jfs_delfile jfs_delfile_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_delfile
    ADD CONSTRAINT jfs_delfile_pkey PRIMARY KEY (inode);


--
-- Name: jfs_delslices jfs_delslices_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_delslices
    ADD CONSTRAINT jfs_delslices_pkey PRIMARY KEY (chunkid);


--
-- Name: jfs_detached_node jfs_detached_node_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_detached_node
    ADD CONSTRAINT jfs_detached_node_pkey PRIMARY KEY (inode);


--
-- Name: jfs_dir_quota jfs_dir_quota_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_dir_quota
    ADD CONSTRAINT jfs_dir_quota_pkey PRIMARY KEY (inode);


--
-- Name: jfs_dir_stats jfs_dir_stats_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_dir_stats
    ADD CONSTRAINT jfs_dir_stats_pkey PRIMARY KEY (inode);


--
-- Name: jfs_edge jfs_edge_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_edge
    ADD CONSTRAINT jfs_edge_pkey PRIMARY KEY (id);


--
-- Name: jfs_flock jfs_flock_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_flock
    ADD CONSTRAINT jfs_flock_pkey PRIMARY KEY (id);


--
-- Name: jfs_node jfs_node_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_node
    ADD CONSTRAINT jfs_node_pkey PRIMARY KEY (inode);


--
-- Name: jfs_plock jfs_plock_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_plock
    ADD CONSTRAINT jfs_plock_pkey PRIMARY KEY (id);


--
-- Name: jfs_session2 jfs_session2_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_session2
    ADD CONSTRAINT jfs_session2_pkey PRIMARY KEY (sid);


--
-- Name: jfs_setting jfs_setting_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_setting
    ADD CONSTRAINT jfs_setting_pkey PRIMARY KEY (name);


--
-- Name: jfs_sustained jfs_sustained_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_sustained
    ADD CONSTRAINT jfs_sustained_pkey PRIMARY KEY (id);


--
-- Name: jfs_symlink jfs_symlink_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_symlink
    ADD CONSTRAINT jfs_symlink_pkey PRIMARY KEY (inode);


--
-- Name: jfs_user_group_quota jfs_user_group_quota_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_user_group_quota
    ADD CONSTRAINT jfs_user_group_quota_pkey PRIMARY KEY (qtype, qkey);


--
-- Name: jfs_xattr jfs_xattr_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.jfs_xattr
    ADD CONSTRAINT jfs_xattr_pkey PRIMARY KEY (id);


--
-- Name: IDX_jfs_chunk_ref_refs; Type: INDEX; Schema: public; Owner: postgres
--

CREATE INDEX "IDX_jfs_chunk_ref_refs" ON public.jfs_chunk_ref USING btree (refs);


--
-- Name: IDX_jfs_edge_inode; Type: INDEX; Schema: public; Owner: postgres
--

CREATE INDEX "IDX_jfs_edge_inode" ON public.jfs_edge USING btree (inode);


--
-- Name: UQE_jfs_chunk_chunk; Type: INDEX; Schema: public; Owner: postgres
--

CREATE UNIQUE INDEX "UQE_jfs_chunk_chunk" ON public.jfs_chunk USING btree (inode, indx);


--
-- Name: UQE_jfs_edge_edge; Type: INDEX; Schema: public; Owner: postgres
--

CREATE UNIQUE INDEX "UQE_jfs_edge_edge" ON public.jfs_edge USING btree (parent, name);


--
-- Name: UQE_jfs_flock_flock; Type: INDEX; Schema: public; Owner: postgres
--

CREATE UNIQUE INDEX "UQE_jfs_flock_flock" ON public.jfs_flock USING btree (inode, sid, owner);


--
-- Name: UQE_jfs_plock_plock; Type: INDEX; Schema: public; Owner: postgres
--

CREATE UNIQUE INDEX "UQE_jfs_plock_plock" ON public.jfs_plock USING btree (inode, sid, owner);


--
-- Name: UQE_jfs_sustained_sustained; Type: INDEX; Schema: public; Owner: postgres
--

CREATE UNIQUE INDEX "UQE_jfs_sustained_sustained" ON public.jfs_sustained USING btree (sid, inode);


--
-- Name: UQE_jfs_xattr_name; Type: INDEX; Schema: public; Owner: postgres
--

CREATE UNIQUE INDEX "UQE_jfs_xattr_name" ON public.jfs_xattr USING btree (inode, name);


--
-- PostgreSQL database dump complete
--

\unrestrict Z47sDbdEnti9dKuLbXnRLsvj906r2OTpKLa89OyH1WR3Yj6otm9YT8RYTYBpaRZ

